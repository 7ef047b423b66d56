import type { CommittedEvents } from '../eventStore/sqliteGroupCommit.ts';

/** The service's gather window: the analytics group folds the commits of 25 ms together (decisions 103, 111). */
export const DEFAULT_PROJECTOR_GATHER_MS = 25;

/**
 * Holds the commits it is given for up to `windowMs` after the first one held, then hands them all
 * on in order, in one call. The event store's writer thread gathers the commits it forwards to the
 * projector thread this way and posts each window as one message (decision 111); the projector
 * thread gathers the commits the main thread hands it. The groups' subscriptions take every queued
 * commit that continues from their checkpoint as one batch, so the groups fold a window's commits
 * with one read-store transaction instead of one per commit (decision 103). Nothing waits on these
 * groups to answer a request; `windowMs` 0 hands each commit on at once.
 */
export class CommitGatherer {
  private held: CommittedEvents[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly windowMs: number,
    private readonly handOn: (commits: CommittedEvents[]) => void,
  ) {}

  /** A commit to hand on: at once without a window, else with the others of its window. */
  take(committed: CommittedEvents): void {
    if (this.windowMs <= 0) return this.handOn([committed]);
    this.held.push(committed);
    this.timer ??= setTimeout(() => this.flush(), this.windowMs);
  }

  /** Hands on every commit held, now (the window's end, or a stop); nothing if none is held. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    this.handOn(held);
  }
}
