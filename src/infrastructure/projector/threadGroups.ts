/**
 * Projection groups run by a worker thread on connections of its own, to the event store's file
 * (to catch up, and for other processes' commits, found by polling) and to the groups' read store
 * file. Both threads that run groups use it: the projector thread (the analytics group,
 * projectorThread.worker.ts) and the event store's writer thread (the core group, decision 087,
 * sqliteWriterThread.worker.ts).
 *
 * The thread hands it the rows of each commit it learns of (`offer`); the groups fold them in the
 * microtasks that follow. The writer thread answers a commit once they have (`checkpoint`), so the
 * main thread finds the core read models current when its appends resolve. Each group's checkpoint
 * is published in shared memory as it advances, and posted only while the main thread has a caller
 * waiting on it (publishedGroup.ts). A stop first folds the log up to its head.
 */
import { startGroup, type GroupDefinition } from '../../core/projectionGroups.ts';
import type { ProjectionRunner, RunnerLogger } from '../../core/projectionRunner.ts';
import { SqliteEventStore } from '../eventStore/sqliteEventStore.ts';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import { SqliteReadStore } from '../readStore/sqliteReadStore.ts';
import { isSqliteBusy } from '../sqliteWal.ts';
import { publishCheckpoint } from './publishedGroup.ts';

/** How long a stop waits for the groups to fold the log up to its head (a failing group does not hold it longer). */
const STOP_CATCH_UP_MS = 2_000;

/**
 * Starts that meet another connection's lock on a file (an SQLITE_BUSY error: several threads and
 * the checkpointer open and set up the same files right after a service starts) are tried again,
 * up to START_ATTEMPTS in all, after 100, 200, 400 and 800 ms. The switch to WAL, which SQLite does
 * not let wait on the busy timeout, is retried on its own by `enterWal`; this covers the rest of a
 * group's setting up.
 */
export const START_ATTEMPTS = 5;
const START_RETRY_MS = 100;

export interface ThreadGroupsOptions {
  eventsFile: string;
  readsFile: string;
  /** Names of the groups to run, in the order of their slots in `published`. */
  groups: string[];
  /** How often the groups' subscriptions look for other processes' commits. */
  pollIntervalMs: number;
  /** Where the checkpoints are published (publishedGroup.ts). */
  published: SharedArrayBuffer;
  /**
   * The read store connection's `wal_autocheckpoint`; absent: sqliteWal.ts's for a worker thread.
   * The writer thread passes 0: a checkpoint there would hold every append, and the main thread's
   * connection to the same file has its checkpointer copy the WAL.
   */
  readsWalAutocheckpoint?: number;
}

export class ThreadGroups {
  /** Called each time a group has written a batch. */
  onAdvance: (() => void) | undefined;
  private readonly runners: Array<{ name: string; runner: ProjectionRunner }> = [];

  private constructor(
    private readonly events: SqliteEventStore,
    private readonly reads: SqliteReadStore,
  ) {}

  /**
   * Starts the groups `options` names, of `definitions`; `post` sends a group's checkpoint to the
   * main thread while a caller there waits for it. A start that meets another connection's lock is
   * tried again (START_ATTEMPTS). Rejects (having closed what it opened) if a group cannot start.
   */
  static async start(
    options: ThreadGroupsOptions,
    definitions: GroupDefinition[],
    logger: RunnerLogger & { warn(obj: object, msg: string): void },
    post: (group: string, position: number) => void,
  ): Promise<ThreadGroups> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await ThreadGroups.startOnce(options, definitions, logger, post);
      } catch (error) {
        if (attempt >= START_ATTEMPTS || !isSqliteBusy(error)) throw error;
        logger.warn({ err: error, attempt }, 'projection groups: a file was locked at the start, trying again');
        await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS * 2 ** (attempt - 1)));
      }
    }
  }

  private static async startOnce(
    options: ThreadGroupsOptions,
    definitions: GroupDefinition[],
    logger: RunnerLogger,
    post: (group: string, position: number) => void,
  ): Promise<ThreadGroups> {
    const events = SqliteEventStore.open(options.eventsFile, {
      writer: 'inline',
      pollIntervalMs: options.pollIntervalMs,
    });
    let reads: SqliteReadStore;
    try {
      reads = SqliteReadStore.open(options.readsFile, { walAutocheckpoint: options.readsWalAutocheckpoint });
    } catch (error) {
      await events.close();
      throw error;
    }
    const groups = new ThreadGroups(events, reads);
    const published = new BigInt64Array(options.published);
    try {
      for (const group of definitions.filter((g) => options.groups.includes(g.name))) {
        const index = options.groups.indexOf(group.name);
        const publish = (position: number) =>
          publishCheckpoint(published, index, position, () => post(group.name, position));
        const runner = await startGroup(events, reads, group, logger, (position) => {
          publish(position);
          groups.onAdvance?.();
        });
        publish(runner.checkpoint);
        groups.runners.push({ name: group.name, runner });
      }
    } catch (error) {
      await groups.close();
      throw error;
    }
    return groups;
  }

  /** The lowest checkpoint of the groups: every group has folded the log up to it. */
  get checkpoint(): number {
    let lowest = Infinity;
    for (const { runner } of this.runners) lowest = Math.min(lowest, runner.checkpoint);
    return lowest === Infinity ? 0 : lowest;
  }

  /** Each group's checkpoint, by name. */
  checkpoints(): Record<string, number> {
    return Object.fromEntries(this.runners.map(({ name, runner }) => [name, runner.checkpoint]));
  }

  /** Rows committed by another connection: each group folds them (in the microtasks that follow). */
  offer(committed: CommittedEvents): void {
    this.events.offerExternalCommit(committed);
  }

  /**
   * Folds the log up to its head (at most STOP_CATCH_UP_MS), reading the store for commits not
   * handed over (one may still be on its way on another port), then stops the groups and closes
   * the connections.
   */
  async stop(): Promise<void> {
    const head = await this.events.headPosition();
    this.events.catchUpSubscriptions();
    await Promise.all(this.runners.map(({ runner }) => runner.waitFor(head, STOP_CATCH_UP_MS)));
    await this.close();
  }

  private async close(): Promise<void> {
    await Promise.all(this.runners.map(({ runner }) => runner.stop()));
    await this.events.close();
    await this.reads.close();
  }
}
