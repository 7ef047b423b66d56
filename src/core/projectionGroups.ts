import type { EventLog } from './eventStore.ts';
import type { ReadStore } from './readStore.ts';
import { collectionsOf, indexesOf, type AnyProjection } from './projection.ts';
import { ProjectionRunner, type RunnerLogger } from './projectionRunner.ts';

/** Events read from the log and folded per transaction while rebuilding. */
export const REBUILD_PAGE_SIZE = 2_000;

export interface RebuildResult {
  /** Events read from the log (every event, also those no projection handles). */
  events: number;
  /** Position of the last event replayed (the new checkpoint); 0 for an empty log. */
  position: number;
}

/**
 * Rebuilds a group of read models from scratch: removes every document of the projections'
 * collections and their checkpoint (one transaction), then replays the whole log from position 0
 * in pages through `ProjectionRunner.handle`, so the fold is exactly the one the live projector
 * runs. Each page is written with its checkpoint in one transaction, so an interrupted rebuild
 * leaves a consistent prefix that the service's projector simply continues from.
 *
 * Progress is measured in positions, not event counts (positions need not be contiguous):
 * `done` is the last position handled, `total` the head position when the rebuild started (or
 * `done`, when events were appended meanwhile and the rebuild went past it). The last call has
 * done === total.
 *
 * Run it with the service stopped: a running projector writing the same collections would race
 * with the reset.
 */
export const rebuildReadModels = async (
  events: EventLog,
  reads: ReadStore,
  projections: AnyProjection[],
  checkpointName: string,
  onProgress?: (done: number, total: number) => void,
  pageSize = REBUILD_PAGE_SIZE,
): Promise<RebuildResult> => {
  await reads.reset(collectionsOf(projections), checkpointName);
  for (const [collection, fields] of indexesOf(projections)) await reads.ensureIndex(collection, fields);

  const runner = new ProjectionRunner(events, reads, projections, checkpointName);
  const head = await events.headPosition();
  let position = 0;
  let count = 0;
  onProgress?.(0, head);
  for (;;) {
    const page = await events.readAll({ after: position, maxCount: pageSize });
    if (page.length === 0) break;
    await runner.handle(page);
    position = page.at(-1)!.position;
    count += page.length;
    onProgress?.(position, Math.max(head, position));
  }
  return { events: count, position };
};

/** A projection group as the runners need it (projections/index.ts defines the service's). */
export interface GroupDefinition {
  name: string;
  projections: AnyProjection[];
  checkpoint: string;
}

/**
 * Starts a group's runner. `onAdvance` is set before the runner starts, so it sees the catch-up
 * batches too. Used on the main thread and on the projector thread alike.
 */
export const startGroup = async (
  events: EventLog,
  reads: ReadStore,
  group: GroupDefinition,
  logger: RunnerLogger,
  onAdvance?: (position: number) => void,
): Promise<ProjectionRunner> => {
  const runner = new ProjectionRunner(events, reads, group.projections, group.checkpoint, logger);
  runner.onAdvance = onAdvance;
  await runner.start();
  return runner;
};
