/**
 * The projector thread (see projectorThread.ts): runs an environment's projection groups on its
 * own connections to the event store and the read store, off the main thread.
 *
 * Messages from the main thread: `committed` (the rows the main thread just committed, handed to
 * the subscriptions as if this store had committed them; held for `gatherMs` and folded together,
 * windowGatherer.ts), `feed` (a port on which the event store's writer thread forwards the
 * commits' rows, already gathered into windows: each message's commits are handed on at once,
 * decision 111) and `stop`. To it:
 * `ready` (every group started, with its checkpoint), `checkpoint` (a group wrote a batch, posted
 * only while the main thread wants it; the checkpoint is always published in shared memory) and
 * `failed` (it could not start); after `stop` it folds the log up to its head (at most 2 s) and
 * ends.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { PROJECTION_GROUPS } from '../../projections/index.ts';
import { createLogger } from '../../logger.ts';
import type { FromProjectorThread, ProjectorThreadData, ToProjectorThread } from './projectorThread.ts';
import { ThreadGroups } from './threadGroups.ts';
import { WindowGatherer } from '../windowGatherer.ts';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import type { ForwardedCommits } from '../eventStore/sqliteWriterThread.ts';
import { nameThread } from '../threadIdentity.ts';

const options = workerData as ProjectorThreadData;
const port = parentPort!;
const send = (message: FromProjectorThread) => port.postMessage(message);
const logger = createLogger(options.logLevel).child({ environment: options.environment, thread: 'projector' });

const run = async () => {
  nameThread(`proj-${options.environment}`);
  const { eventsFile, readsFile, groups: names, pollIntervalMs, published } = options;
  const starting = ThreadGroups.start(
    { eventsFile, readsFile, groups: names, pollIntervalMs, published },
    PROJECTION_GROUPS,
    logger,
    (group, position) => send({ type: 'checkpoint', group, position }),
  );
  let groups: ThreadGroups | undefined;
  let feed: MessagePort | undefined;
  let stopping: Promise<void> | undefined;
  // commits handed over before the groups started are read from the store when they start
  const handOn = (commits: CommittedEvents[]) => {
    for (const committed of commits) groups?.offer(committed);
  };
  const gatherer = new WindowGatherer<CommittedEvents>(options.gatherMs, handOn);
  const stop = () =>
    (stopping ??= (async () => {
      gatherer.flush();
      // A graceful stop leaves the groups at the head of the log (ThreadGroups.stop reads the
      // store: a commit forwarded by the writer thread comes on another port than `stop`).
      await starting.then(
        (started) => started.stop(),
        () => undefined, // it closed what it opened
      );
      feed?.close();
      port.close(); // the thread then ends: the main thread waits for its exit
    })());
  port.on('message', (message: ToProjectorThread) => {
    if (message.type === 'committed') gatherer.take(message.committed);
    else if (message.type === 'feed') {
      feed?.close();
      feed = message.port;
      feed.on('message', (forwarded: ForwardedCommits) => {
        gatherer.flush(); // anything the main thread handed over first keeps its place
        handOn(forwarded.commits);
      });
    } else if (message.type === 'stop') void stop();
  });
  try {
    groups = await starting;
  } catch (error) {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    await stop();
    return;
  }
  send({ type: 'ready', checkpoints: groups.checkpoints() });
};

void run();
