/**
 * Projection groups folded on the event store's writer thread (decision 087): the embedded
 * service's core group, whose read models a write's answer waits for (read-your-writes).
 *
 * The writer thread hands each commit's rows to the groups right after the commit
 * (`offer`), and answers the commit once they have folded it (sqliteWriterThread.worker.ts): the
 * main thread then finds the read models current when its appends resolve, without another
 * thread's message in between and without folding them itself. The groups read and write through
 * connections of their own: the event store's file (to catch up, and for other processes' commits,
 * found by polling) and the read store's. The read store's connection never checkpoints: a
 * checkpoint would hold every append; the main thread's connection to the same file has its
 * checkpointer copy the WAL (sqliteWal.ts). Each group's checkpoint is published in shared memory,
 * and posted only while the main thread has a caller waiting (publishedGroup.ts).
 */
import { startGroup, type GroupDefinition } from '../../core/projectionGroups.ts';
import type { ProjectionRunner, RunnerLogger } from '../../core/projectionRunner.ts';
import { SqliteEventStore } from '../eventStore/sqliteEventStore.ts';
import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';
import type { WriterGroupsOpen } from '../eventStore/sqliteWriterThread.ts';
import { SqliteReadStore } from '../readStore/sqliteReadStore.ts';
import { publishCheckpoint } from './publishedGroup.ts';

/** How long a stop waits for the groups to fold the log up to its head (a failing group does not hold it longer). */
const STOP_CATCH_UP_MS = 2_000;

export class WriterGroups {
  /** Called each time a group has written a batch. */
  onAdvance: (() => void) | undefined;
  private readonly runners: ProjectionRunner[] = [];

  private constructor(
    private readonly events: SqliteEventStore,
    private readonly reads: SqliteReadStore,
  ) {}

  /**
   * Starts the groups `options` names, of `definitions`, on the events file's log; `post` sends a
   * group's checkpoint to the main thread while a caller there waits for it. Rejects (having
   * closed what it opened) if a group cannot start.
   */
  static async start(
    eventsFile: string,
    options: WriterGroupsOpen,
    definitions: GroupDefinition[],
    logger: RunnerLogger,
    post: (group: string, position: number) => void,
  ): Promise<WriterGroups> {
    const events = SqliteEventStore.open(eventsFile, { writer: 'inline', pollIntervalMs: options.pollIntervalMs });
    let reads: SqliteReadStore;
    try {
      reads = SqliteReadStore.open(options.readsFile, { walAutocheckpoint: 0 });
    } catch (error) {
      await events.close();
      throw error;
    }
    const groups = new WriterGroups(events, reads);
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
        groups.runners.push(runner);
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
    for (const runner of this.runners) lowest = Math.min(lowest, runner.checkpoint);
    return lowest === Infinity ? 0 : lowest;
  }

  /** Rows the writer thread just committed: each group folds them (in the microtasks that follow). */
  offer(committed: CommittedEvents): void {
    this.events.offerExternalCommit(committed);
  }

  /** Folds the log up to its head (at most STOP_CATCH_UP_MS), then stops the groups and closes the connections. */
  async stop(): Promise<void> {
    const head = await this.events.headPosition();
    this.events.catchUpSubscriptions();
    await Promise.all(this.runners.map((runner) => runner.waitFor(head, STOP_CATCH_UP_MS)));
    await this.close();
  }

  private async close(): Promise<void> {
    await Promise.all(this.runners.map((runner) => runner.stop()));
    await this.events.close();
    await this.reads.close();
  }
}
