import type { DomainEvent } from './decider.ts';
import type { EventLog, TypedPage } from './eventStore.ts';
import type { ReadStore } from './readStore.ts';
import { collectionsOf, indexesOf, type AnyProjection } from './projection.ts';
import { ProjectionRunner, type RunnerLogger } from './projectionRunner.ts';
import { WrittenIds } from './writtenIds.ts';

/**
 * Events read from the log and folded per transaction while rebuilding. Larger pages rewrite a
 * document that many events touch (a voucher's usage) once per page instead of once per 2,000
 * events, and commit less often; a page's events and documents are held in memory at once.
 */
export const REBUILD_PAGE_SIZE = 10_000;

export interface RebuildResult {
  /** Events read from the log (every event, also those no projection handles). */
  events: number;
  /** Position of the last event replayed (the new checkpoint); 0 for an empty log. */
  position: number;
}

/** One group to rebuild: its read store, projections and checkpoint. */
export interface RebuildTarget {
  reads: ReadStore;
  projections: AnyProjection[];
  checkpoint: string;
}

/** Runs `work` inside every store's bulkWrites (where a store has it), outermost first. */
const inBulk = <T>(stores: ReadStore[], work: () => Promise<T>): Promise<T> => {
  const [first, ...rest] = stores;
  if (first === undefined) return work();
  const inner = () => inBulk(rest, work);
  return first.bulkWrites ? first.bulkWrites(inner) : inner();
};

/**
 * Rebuilds groups of read models from scratch, reading the log once for all of them: removes
 * every document of each group's collections and its checkpoint (one transaction per group),
 * then replays the whole log from position 0 in pages (of which the log decodes only the event
 * types some projection handles, where it can), each page through each group's
 * `ProjectionRunner.handle`, so the fold is exactly the one the live projector runs (without
 * looking up documents the rebuild has not written yet: they are absent). Each page
 * is written with its checkpoint in one transaction per group, so an interrupted rebuild leaves
 * a consistent prefix that the service's projector simply continues from. The stores run the
 * replay in their bulk-write mode (ReadStore.bulkWrites) where they have one.
 *
 * Progress is measured in positions, not event counts (positions need not be contiguous):
 * `done` is the last position handled, `total` the head position when the rebuild started (or
 * `done`, when events were appended meanwhile and the rebuild went past it). The last call has
 * done === total.
 *
 * Run it with the service stopped: a running projector writing the same collections would race
 * with the reset.
 */
export const rebuildGroups = async (
  events: EventLog,
  targets: RebuildTarget[],
  onProgress?: (done: number, total: number) => void,
  pageSize = REBUILD_PAGE_SIZE,
): Promise<RebuildResult> => {
  for (const { reads, projections, checkpoint } of targets) {
    await reads.reset(collectionsOf(projections), checkpoint);
    for (const [collection, fields] of indexesOf(projections)) await reads.ensureIndex(collection, fields);
  }
  const runners = targets.map((t) => ({
    runner: new ProjectionRunner(events, t.reads, t.projections, t.checkpoint),
    // what the runner writes from now on; everything else is absent (the collections are empty)
    written: new WrittenIds(),
  }));
  const head = await events.headPosition();
  // only the events some projection handles are decoded (where the log can leave the others out)
  const types = [...new Set(targets.flatMap((t) => t.projections.flatMap((p) => p.handles)))];
  const readPage = async (after: number): Promise<TypedPage<DomainEvent>> => {
    if (events.readAllOfTypes) return events.readAllOfTypes({ after, maxCount: pageSize, types });
    const page = await events.readAll({ after, maxCount: pageSize });
    return { events: page, scanned: page.length, lastPosition: page.at(-1)?.position ?? after };
  };
  const replay = async (): Promise<RebuildResult> => {
    let position = 0;
    let count = 0;
    onProgress?.(0, head);
    for (;;) {
      const page = await readPage(position);
      if (page.scanned === 0) break;
      position = page.lastPosition;
      for (const { runner, written } of runners) await runner.handle(page.events, { written, through: position });
      count += page.scanned;
      onProgress?.(position, Math.max(head, position));
    }
    return { events: count, position };
  };
  return inBulk([...new Set(targets.map((t) => t.reads))], replay);
};

/** Rebuilds one group of read models (rebuildGroups with a single group). */
export const rebuildReadModels = (
  events: EventLog,
  reads: ReadStore,
  projections: AnyProjection[],
  checkpointName: string,
  onProgress?: (done: number, total: number) => void,
  pageSize = REBUILD_PAGE_SIZE,
): Promise<RebuildResult> =>
  rebuildGroups(events, [{ reads, projections, checkpoint: checkpointName }], onProgress, pageSize);

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
