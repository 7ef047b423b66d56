/**
 * The projector thread (see projectorThread.ts): runs an environment's projection groups on its
 * own connections to the event store and the read store, off the main thread.
 *
 * Messages from the main thread: `committed` (the rows the main thread just committed, handed to
 * the subscriptions as if this store had committed them), `feed` (a port on which the event
 * store's writer thread forwards each commit's rows, taken the same way) and `stop`. To it:
 * `ready` (every group started, with its checkpoint), `checkpoint` (a group wrote a batch, posted
 * only while the main thread wants it; the checkpoint is always published in shared memory) and
 * `failed` (it could not start); after `stop` it folds the log up to its head (at most 2 s) and
 * ends.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { PROJECTION_GROUPS } from '../../projections/index.ts';
import { createLogger } from '../../logger.ts';
import { SqliteEventStore } from '../eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../readStore/sqliteReadStore.ts';
import type { ProjectionRunner } from '../../core/projectionRunner.ts';
import { startGroup } from '../../core/projectionGroups.ts';
import type { FromProjectorThread, ProjectorThreadData, ToProjectorThread } from './projectorThread.ts';
import { publishCheckpoint } from './publishedGroup.ts';
import type { ForwardedCommit } from '../eventStore/sqliteWriterThread.ts';
import { nameThread } from '../threadIdentity.ts';

const options = workerData as ProjectorThreadData;
const port = parentPort!;
const send = (message: FromProjectorThread) => port.postMessage(message);
const logger = createLogger(options.logLevel).child({ environment: options.environment, thread: 'projector' });
const published = new BigInt64Array(options.published);
/** How long a stop waits for the groups to fold the log up to its head (a failing group does not hold it longer). */
const STOP_CATCH_UP_MS = 2_000;

const run = async () => {
  nameThread(`proj-${options.environment}`);
  const events = SqliteEventStore.open(options.eventsFile, { pollIntervalMs: options.pollIntervalMs });
  const reads = SqliteReadStore.open(options.readsFile);
  const runners: ProjectionRunner[] = [];
  const checkpoints: Record<string, number> = {};
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // A graceful stop leaves the groups at the head of the log. A commit forwarded by the writer
      // thread comes on another port than `stop`, so it may still be on its way: read the store.
      const head = await events.headPosition();
      events.catchUpSubscriptions();
      await Promise.all(runners.map((runner) => runner.waitFor(head, STOP_CATCH_UP_MS)));
      await Promise.all(runners.map((runner) => runner.stop()));
      await events.close();
      await reads.close();
      feed?.close();
      port.close(); // the thread then ends: the main thread waits for its exit
    })());
  let feed: MessagePort | undefined;
  port.on('message', (message: ToProjectorThread) => {
    if (message.type === 'committed') events.offerExternalCommit(message.committed);
    else if (message.type === 'feed') {
      feed?.close();
      feed = message.port;
      feed.on('message', (forwarded: ForwardedCommit) => events.offerExternalCommit(forwarded.committed));
    } else if (message.type === 'stop') void stop();
  });
  try {
    for (const group of PROJECTION_GROUPS.filter((g) => options.groups.includes(g.name))) {
      const index = options.groups.indexOf(group.name);
      // each batch's checkpoint to shared memory, and as a message while a caller waits on it
      const runner = await startGroup(events, reads, group, logger, (position) =>
        publishCheckpoint(published, index, position, () => send({ type: 'checkpoint', group: group.name, position })),
      );
      runners.push(runner);
      checkpoints[group.name] = runner.checkpoint;
    }
  } catch (error) {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    await stop();
    return;
  }
  send({ type: 'ready', checkpoints });
};

void run();
