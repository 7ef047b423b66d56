import { randomUUID } from 'node:crypto';
import { FencedWriteError, type ReadStore, type WriteBatch } from './readStore.ts';

/** Collection of the lease documents in a read store. */
export const LEASES = 'leases';

/** A lease document: who writes the group's read models, until when, and the fence of that tenure. */
export interface LeaseDoc {
  [key: string]: unknown;
  id: string;
  holder: string;
  /** Epoch milliseconds of the injected clock after which another process may take the lease. */
  expiresAt: number;
  /** New at each take-over: the writes of this tenure are fenced on it. */
  token: string;
}

export interface LeaseOptions {
  /** The store the leased writer writes to (the lease document lives beside its documents). */
  store: ReadStore;
  /** The lease's name: one per group in each environment's store (e.g. `core`). */
  name: string;
  /** This process's name (logged, and stored as the holder). */
  holder: string;
  clock: { now(): Date };
  /** How long a lease lasts without renewal (default 15 s). */
  ttlMs?: number;
}

/**
 * A lease with expiry in a read store (decision 053): one document per name, `{holder,
 * expiresAt, token}`. `tick()` takes the lease when it is free or expired, renews it while held
 * (every write is a compare-and-set on the token), and reports whether it is held. A holder stops
 * believing it holds the lease a third of the TTL before the expiry; and every write of the
 * tenure goes through `fenced(batch)`, which makes the store refuse it once another process has
 * taken the lease, so a paused holder can never overwrite a newer checkpoint.
 */
export class Lease {
  readonly ttlMs: number;
  private token: string | null = null;
  private validUntil = 0;

  constructor(private readonly options: LeaseOptions) {
    this.ttlMs = options.ttlMs ?? 15_000;
  }

  /** True while this process holds the lease and its last renewal leaves more than a third of the TTL. */
  get held(): boolean {
    return this.token !== null && this.options.clock.now().getTime() < this.validUntil - this.ttlMs / 3;
  }

  /** Takes or renews the lease; false when another process holds it (or the store refused). */
  async tick(): Promise<boolean> {
    const { store, name, holder, clock } = this.options;
    const now = clock.now().getTime();
    const current = await store.get<LeaseDoc>(LEASES, name);
    const mine = current !== null && this.token !== null && current.token === this.token;
    if (!mine && current !== null && current.expiresAt > now) {
      this.token = null;
      return false;
    }
    const token = mine ? this.token! : randomUUID();
    const doc: LeaseDoc = { id: name, holder, expiresAt: now + this.ttlMs, token };
    try {
      await store.writeBatch({
        upserts: [{ collection: LEASES, doc }],
        fence: { collection: LEASES, id: name, field: 'token', value: current?.token ?? null },
      });
    } catch (error) {
      this.token = null;
      if (error instanceof FencedWriteError) return false; // another process took it first
      throw error;
    }
    this.token = token;
    this.validUntil = now + this.ttlMs;
    return true;
  }

  /** The batch fenced on this tenure: the store writes it only while the lease is still this tenure's. */
  fenced(batch: WriteBatch): WriteBatch {
    if (this.token === null) throw new FencedWriteError(LEASES, this.options.name);
    return { ...batch, fence: { collection: LEASES, id: this.options.name, field: 'token', value: this.token } };
  }

  /** `store` with every batch fenced on this lease (what the leased writer is given). */
  fencedStore(store: ReadStore = this.options.store): ReadStore {
    return new Proxy(store, {
      get: (target, prop) => {
        if (prop === 'writeBatch') return (batch: WriteBatch) => target.writeBatch(this.fenced(batch));
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** True when this process holds the lease, or could take it now (none stored, expired, or given up). */
  async available(): Promise<boolean> {
    if (this.held) return true;
    const current = await this.options.store.get<LeaseDoc>(LEASES, this.options.name);
    return current === null || current.expiresAt <= this.options.clock.now().getTime();
  }

  /** Gives the lease up (when stopping), so another process takes it without waiting for the expiry. */
  async release(): Promise<void> {
    if (this.token === null) return;
    const { store, name, holder } = this.options;
    const token = this.token;
    this.token = null;
    await store
      .writeBatch({
        upserts: [{ collection: LEASES, doc: { id: name, holder, expiresAt: 0, token } }],
        fence: { collection: LEASES, id: name, field: 'token', value: token },
      })
      .catch(() => {}); // taken already: nothing to give up
  }
}

/** What runs while the lease is held: started on taking it, stopped on losing it. */
export interface LeasedWork {
  start(store: ReadStore): Promise<{ stop(): Promise<void> }>;
}

/**
 * Runs `work` only while `lease` is held: `check()` (every third of the TTL, or called by tests)
 * renews or takes the lease, starts the work on the fenced store when the lease is taken, and
 * stops it when the lease is lost or can no longer be renewed in time.
 */
export class LeasedRunner {
  private running?: { stop(): Promise<void> };
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private stopped = false;

  constructor(
    readonly lease: Lease,
    private readonly work: LeasedWork,
    private readonly logger?: { error(obj: object, msg: string): void; info?(obj: object, msg: string): void },
  ) {}

  /** True while the work runs (this process holds the lease). */
  get active(): boolean {
    return this.running !== undefined;
  }

  /** First check now; then every third of the TTL unless `timer` is false (tests call check()). */
  async start(timer = true): Promise<void> {
    await this.check();
    if (!timer) return;
    this.timer = setInterval(() => void this.check(), Math.max(50, Math.floor(this.lease.ttlMs / 3)));
    this.timer.unref();
  }

  /** Renews or takes the lease, then starts or stops the work to match. */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.lease.tick();
    } catch (error) {
      this.logger?.error({ err: error }, 'lease renewal failed');
    }
    if (this.lease.held && !this.running && !this.stopped) {
      this.running = await this.work.start(this.lease.fencedStore());
    } else if (!this.lease.held && this.running) {
      const running = this.running;
      this.running = undefined;
      // its last writes (a checkpoint) are refused once another process holds the lease
      await running.stop().catch((error: unknown) => this.logger?.error({ err: error }, 'leased work failed to stop'));
    }
  }

  /** Stops the work and gives the lease up. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.checking;
    await this.running?.stop();
    this.running = undefined;
    await this.lease.release();
  }
}
