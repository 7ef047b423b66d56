/**
 * Holds the items it is given for up to `windowMs` after the first one held, then hands them all
 * on in order, in one call; `windowMs` 0 hands each item on at once, alone. Used where one message
 * per item would wake a thread per item for work that nothing waits on promptly:
 *
 * - the event store's writer thread gathers the commits it forwards to the projector thread and
 *   posts each window as one message (decision 111); the projector thread gathers the commits the
 *   main thread hands it. The groups' subscriptions take every queued commit that continues from
 *   their checkpoint as one batch, so they fold a window's commits with one read-store transaction
 *   instead of one per commit (decision 103);
 * - a SQLite snapshot store gathers the saves it hands the snapshot writer thread, which writes a
 *   window's saves in one transaction and answers them in one message (decision 112).
 */
export class WindowGatherer<T> {
  private held: T[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly windowMs: number,
    private readonly handOn: (items: T[]) => void,
  ) {}

  /** An item to hand on: at once without a window, else with the others of its window. */
  take(item: T): void {
    if (this.windowMs <= 0) return this.handOn([item]);
    this.held.push(item);
    this.timer ??= setTimeout(() => this.flush(), this.windowMs);
  }

  /** Hands on every item held, now (the window's end, or a stop); nothing if none is held. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    this.handOn(held);
  }
}
