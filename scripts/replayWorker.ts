/**
 * One projection group's rebuild for `npm run replay` (scripts/replay.ts), on a thread of its
 * own with its own connections to the event store and the group's read store, so that the
 * groups of an environment are rebuilt side by side. Posts `progress` after each page, then
 * `done` with the result, or `failed`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { rebuildGroups, type RebuildResult } from '../src/core/projectionGroups.ts';
import { SqliteEventStore } from '../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../src/infrastructure/readStore/sqliteReadStore.ts';
import { PROJECTION_GROUPS } from '../src/projections/index.ts';

export interface ReplayJob {
  group: string;
  eventsFile: string;
  readsFile: string;
}

export type FromReplayWorker =
  | { type: 'progress'; done: number; total: number }
  | ({ type: 'done' } & RebuildResult)
  | { type: 'failed'; message: string };

const job = workerData as ReplayJob;
const port = parentPort!;
const send = (message: FromReplayWorker) => port.postMessage(message);

const run = async () => {
  const group = PROJECTION_GROUPS.find((g) => g.name === job.group);
  if (!group) throw new Error(`no projection group named ${job.group}`);
  const events = SqliteEventStore.open(job.eventsFile);
  try {
    const reads = SqliteReadStore.open(job.readsFile);
    try {
      const result = await rebuildGroups(
        events,
        [{ reads, projections: group.projections, checkpoint: group.checkpoint }],
        (done, total) => send({ type: 'progress', done, total }),
      );
      send({ type: 'done', ...result });
    } finally {
      await reads.close();
    }
  } finally {
    await events.close();
  }
};

run().catch((error: unknown) =>
  send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }),
);
