import { setMaxListeners } from 'node:events';
import type { RunnerLogger } from '../../core/projectionRunner.ts';
import type { WriteBatch } from '../../core/readStore.ts';
import { isoSeconds, type Clock } from '../../domain/clock.ts';
import { isSuccess, nextDelay, type Attempt, type Sender, type SendResult } from '../../domain/webhooks/delivery.ts';
import { signingSecrets } from '../../domain/webhooks/endpoint.ts';
import { DELIVERIES, HEALTH, type DeliveryDoc, type DeliveryStore } from './deliveryStore.ts';
import { FAILING_DISABLE_MS, JITTER, MAX_IN_FLIGHT_PER_ENDPOINT, type WebhookSettings } from './settings.ts';
import { signatureHeader } from './signing.ts';

/** Timers, injectable so tests can run the schedule in short, real delays or drive it by hand. */
export interface Scheduler {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemScheduler: Scheduler = {
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, Math.min(ms, 2_147_483_647));
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface DispatcherDeps {
  deliveries: DeliveryStore;
  clock: Clock;
  sender: Sender;
  settings: WebhookSettings;
  /** `user-agent: voucher-service-webhooks/<version>` */
  version: string;
  /** Disables an endpoint (410, 5 days of failures) through its command handler. */
  disable(endpointId: string, reason: string): Promise<void>;
  random?: () => number;
  scheduler?: Scheduler;
  logger?: RunnerLogger;
}

/** An attempt's outcome waiting to be recorded: `apply` makes the stored delivery's next version (and may add to the write). */
interface Outcome {
  id: string;
  apply(delivery: DeliveryDoc, write: WriteBatch): DeliveryDoc;
  done(): void;
  failed(error: unknown): void;
}

/** Due deliveries read from the store per refill. */
const REFILL_SIZE = 500;

/**
 * Deliveries the publisher has made and not stored yet, attempted at once (decision 083): each
 * one's outcome is kept here, not written, until the publisher stores the batch with it.
 */
export interface FirstAttempts {
  /**
   * Resolves once every delivery of the batch has an outcome, or when none has come for `idleMs`,
   * or after `maxMs`, whichever comes first.
   */
  settled(idleMs: number, maxMs: number): Promise<void>;
  /**
   * Ends the batch. Returns each delivery that has an outcome, as its next version (without its
   * in-memory body); what the outcomes add to the write (endpoint health) goes into `write`. An
   * attempt still under way or not started is recorded in the store when it ends, like the
   * attempt of any stored delivery: the publisher stores those deliveries as pending.
   */
  close(write: WriteBatch): Map<string, DeliveryDoc>;
  /** The batch is stored: a retry one of its outcomes scheduled is now read from the store. */
  stored(): void;
}

/** A batch of first attempts: the deliveries by id, the outcomes so far, the ids still without one. */
class FirstBatch {
  readonly outcomes = new Map<string, Outcome['apply']>();
  readonly remaining: Set<string>;
  /** Resolves once the publisher has stored the batch (never, if that write fails: the batch is made again). */
  readonly stored: Promise<void>;
  markStored!: () => void;
  private end: (() => void) | undefined;
  private progress: (() => void) | undefined;

  constructor(readonly docs: ReadonlyMap<string, DeliveryDoc>) {
    this.remaining = new Set(docs.keys());
    this.stored = new Promise<void>((resolve) => {
      this.markStored = resolve;
    });
  }

  outcome(id: string, apply: Outcome['apply']): void {
    this.outcomes.set(id, apply);
    this.remaining.delete(id);
    if (this.remaining.size === 0) this.end?.();
    else this.progress?.();
  }

  settled(idleMs: number, maxMs: number, scheduler: Scheduler): Promise<void> {
    if (this.remaining.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let idle = scheduler.setTimeout(() => this.end?.(), idleMs);
      const cap = scheduler.setTimeout(() => this.end?.(), maxMs);
      this.progress = () => {
        scheduler.clearTimeout(idle);
        idle = scheduler.setTimeout(() => this.end?.(), idleMs);
      };
      this.end = () => {
        this.end = this.progress = undefined;
        scheduler.clearTimeout(idle);
        scheduler.clearTimeout(cap);
        resolve();
      };
    });
  }
}

/**
 * Makes the attempts (decision 027): signs each attempt (Standard Webhooks, every secret that
 * signs at this moment), sends it through the `Sender` (which resolves and checks the target at
 * every attempt), and records the outcome: success, a retry on the schedule, or failure for good,
 * after which the next delivery of the same endpoint and voucher is released. At most
 * MAX_IN_FLIGHT_PER_ENDPOINT attempts run per endpoint; a voucher has at most one.
 *
 * The store is the truth; a queue per endpoint in memory is the fast path. The publisher hands
 * new due deliveries over (`enqueue`), a delivery that ends hands over the next one of its voucher,
 * and the store is read for due deliveries only at start, when a retry falls due (one timer at the
 * earliest), after a resend, recover or test (`wake(true)`), and while a refill came back full.
 */
export class WebhookDispatcher {
  private readonly queues = new Map<string, DeliveryDoc[]>();
  /** Ids queued or in flight: a delivery is never queued twice. */
  private readonly known = new Set<string>();
  /** Ids whose attempt is under way. */
  private readonly inFlight = new Set<string>();
  /** Ids resent while an attempt was under way: that attempt's outcome leaves them pending and due. */
  private readonly resentInFlight = new Set<string>();
  private readonly perEndpoint = new Map<string, number>();
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<void>>();
  /** Since when each endpoint has failed every attempt (null: its last attempt succeeded); loaded lazily. */
  private readonly failingSince = new Map<string, number | null>();
  /** Deliveries attempted before they are stored, by id: their batch collects the outcome. */
  private readonly unstored = new Map<string, FirstBatch>();
  /** Outcomes of ended attempts not recorded yet, and whether their recording is queued. */
  private outcomes: Outcome[] = [];
  private recordQueued = false;
  private timer: unknown;
  private timerAt = Infinity;
  private refillWanted = true;
  private pumping = false;
  private again = false;
  private stopped = false;
  private readonly random: () => number;
  private readonly scheduler: Scheduler;

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random;
    this.scheduler = deps.scheduler ?? systemScheduler;
    // one listener per attempt in flight (the sender's), up to the per-endpoint bound of every endpoint
    setMaxListeners(0, this.controller.signal);
  }

  start(): void {
    this.wake(true);
  }

  /** Looks for due deliveries; `refill`: in the store too (after a resend, a recovery, a test event). */
  wake(refill = false): void {
    if (refill) this.refillWanted = true;
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((error: unknown) => this.deps.logger?.error({ err: error }, 'webhook dispatcher pass failed'))
      .finally(() => {
        this.pumping = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Due deliveries the publisher just wrote (or the one an ended delivery released). */
  enqueue(docs: readonly DeliveryDoc[]): void {
    const now = this.deps.clock.now().getTime();
    for (const doc of docs) {
      if (doc.status !== 'pending' || doc.next_attempt_at === null) continue;
      if (doc.next_attempt_at > now) this.schedule(doc.next_attempt_at - now);
      else this.push(doc);
    }
    this.wake();
  }

  /**
   * Attempts deliveries the publisher has made but not stored yet (decision 083): `docs` are due
   * now, each the first of its endpoint and voucher, with its body in `payload` (kept in memory
   * only). Until `close`, an attempt's outcome is kept in the batch instead of written.
   */
  attemptFirst(docs: readonly DeliveryDoc[]): FirstAttempts {
    const batch = new FirstBatch(new Map(docs.map((doc) => [doc.id, doc])));
    for (const doc of docs) {
      this.unstored.set(doc.id, batch);
      this.push(doc);
    }
    this.wake();
    let retrying = false;
    return {
      settled: (idleMs, maxMs) => batch.settled(idleMs, maxMs, this.scheduler),
      close: (write) => {
        for (const id of batch.remaining) if (this.unstored.get(id) === batch) this.unstored.delete(id);
        const next = new Map<string, DeliveryDoc>();
        for (const [id, apply] of batch.outcomes) {
          const { payload: _body, ...doc } = apply(batch.docs.get(id)!, write);
          if (doc.status === 'pending' && doc.next_attempt_at !== null) retrying = true;
          next.set(id, doc);
        }
        return next;
      },
      stored: () => {
        batch.markStored();
        if (retrying) this.wake(true);
      },
    };
  }

  /**
   * A resend made the delivery pending and due. When an attempt of it is under way, that attempt's
   * outcome is recorded with the delivery still pending and due now, so the resend's own attempt
   * follows instead of being taken by the attempt that was already running.
   */
  resent(id: string): void {
    if (this.inFlight.has(id)) this.resentInFlight.add(id);
  }

  /** Stops picking deliveries and aborts the attempts in flight: they are not recorded, so they are made again after a restart. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.scheduler.clearTimeout(this.timer);
    this.controller.abort();
    await Promise.allSettled([...this.running]);
  }

  private push(doc: DeliveryDoc): void {
    if (this.known.has(doc.id)) return;
    this.known.add(doc.id);
    const queue = this.queues.get(doc.endpoint_id);
    if (queue) queue.push(doc);
    else this.queues.set(doc.endpoint_id, [doc]);
  }

  private async pump(): Promise<void> {
    if (this.refillWanted) await this.refill();
    const starting: DeliveryDoc[] = [];
    for (const [endpointId, queue] of this.queues) {
      let busy = this.perEndpoint.get(endpointId) ?? 0;
      while (queue.length > 0 && busy < MAX_IN_FLIGHT_PER_ENDPOINT && !this.stopped) {
        starting.push(queue.shift()!);
        busy += 1;
        this.perEndpoint.set(endpointId, busy);
      }
      if (queue.length === 0) this.queues.delete(endpointId);
    }
    if (starting.length === 0) return;
    // the bodies of every attempt this pass starts, in one read
    let bodies: Map<string, string>;
    try {
      bodies = await this.deps.deliveries.payloads(starting);
    } catch (error) {
      // not attempted: read again at the next refill (after a stop, the store may be closed)
      for (const delivery of starting) this.started(delivery, this.stopped ? Promise.resolve() : Promise.reject(error));
      return;
    }
    for (const delivery of starting) this.started(delivery, this.attempt(delivery, bodies.get(delivery.id)));
  }

  /** Tracks an attempt until it ends; then its endpoint has room for the next one. */
  private started(delivery: DeliveryDoc, attempt: Promise<void>): void {
    this.inFlight.add(delivery.id);
    const run = attempt
      .catch((error: unknown) =>
        this.deps.logger?.error({ err: error, delivery: delivery.id }, 'webhook attempt failed'),
      )
      .finally(() => {
        this.known.delete(delivery.id);
        this.inFlight.delete(delivery.id);
        this.resentInFlight.delete(delivery.id);
        this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 1) - 1);
        this.running.delete(run);
        this.wake();
      });
    this.running.add(run);
  }

  /** Reads due deliveries from the store, and sets the timer for the next one to fall due. */
  private async refill(): Promise<void> {
    this.refillWanted = false;
    const now = this.deps.clock.now().getTime();
    const limit = REFILL_SIZE + this.known.size;
    const due = await this.deps.deliveries.due(now, limit);
    let added = 0;
    for (const doc of due)
      if (!this.known.has(doc.id)) {
        this.push(doc);
        added += 1;
      }
    if (due.length === limit && added > 0) this.refillWanted = true; // more to read next pass
    const next = await this.deps.deliveries.nextDueAt(now);
    if (next !== null) this.schedule(next - now);
  }

  private schedule(delayMs: number): void {
    const at = this.deps.clock.now().getTime() + delayMs;
    if (at >= this.timerAt && this.timer !== undefined) return;
    this.scheduler.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.scheduler.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.wake(true);
      },
      Math.max(0, delayMs),
    );
  }

  /** One attempt of `delivery` with `body` (undefined: its event's body is not in the store, so it fails without an attempt). */
  private async attempt(delivery: DeliveryDoc, body: string | undefined): Promise<void> {
    const { deliveries, clock, settings } = this.deps;
    if (this.stopped) return;
    if (body === undefined) {
      this.deps.logger?.error({ delivery: delivery.id, event: delivery.event_id }, 'webhook event body missing');
      await this.finish(delivery.id, (d) => ({
        ...d,
        status: 'failed',
        next_attempt_at: null,
        failure_reason: 'event body missing',
      }));
      return;
    }
    const endpoint = await deliveries.endpoint(delivery.endpoint_id);
    if (!endpoint || endpoint.deleted || endpoint.status !== 'enabled') {
      const reason = !endpoint || endpoint.deleted ? 'endpoint deleted' : 'endpoint disabled';
      await this.finish(delivery.id, (d) => ({
        ...d,
        status: 'failed',
        next_attempt_at: null,
        failure_reason: reason,
      }));
      return;
    }
    const started = clock.now();
    const timestamp = Math.floor(started.getTime() / 1000);
    const result: SendResult = await this.deps.sender({
      url: endpoint.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': `voucher-service-webhooks/${this.deps.version}`,
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(signingSecrets(endpoint, started), delivery.event_id, timestamp, body),
      },
      body,
      timeoutMs: settings.timeoutMs,
      allowedCidrs: settings.allowedCidrs,
      signal: this.controller.signal,
    });
    if (this.stopped) return; // not recorded: made again after a restart, with the same webhook-id
    const attempt: Attempt = {
      at: isoSeconds(started),
      ...(result.status !== undefined ? { response_status: result.status } : { error: result.error ?? 'no answer' }),
      duration_ms: Math.round(result.durationMs),
    };
    const now = clock.now().getTime();
    const before = await this.failingSinceOf(delivery.endpoint_id);
    // decided here, not when the outcome is recorded: a delivery not stored yet records it later (decision 083)
    let disableReason: string | undefined;
    if (!isSuccess(result)) {
      if (result.status === 410) disableReason = 'the endpoint answered 410 Gone';
      // the 5 days count from the last change to the endpoint too: re-enabling it (or fixing its URL) starts them again
      else if (now - Math.max(before ?? now, Date.parse(endpoint.updatedAt)) >= FAILING_DISABLE_MS)
        disableReason = 'every delivery failed for 5 days';
    }
    const unstored = this.unstored.get(delivery.id);
    const recorded = this.finish(delivery.id, (d, write) => {
      const attempts = [...d.attempts, attempt];
      if (isSuccess(result)) {
        if (before !== null) {
          write.upserts!.push({ collection: HEALTH, doc: { id: d.endpoint_id, failing_since: null } });
          this.failingSince.set(d.endpoint_id, null);
        }
        return { ...d, attempts, status: 'succeeded', next_attempt_at: null };
      }
      const failingSince = this.failingSince.get(d.endpoint_id) ?? now;
      if (before === null) {
        write.upserts!.push({ collection: HEALTH, doc: { id: d.endpoint_id, failing_since: failingSince } });
        this.failingSince.set(d.endpoint_id, failingSince);
      }
      const delay =
        result.status === 410 ? null : nextDelay(attempts.length, settings.retryDelaysMs, JITTER, this.random, result);
      if (delay === null) return { ...d, attempts, status: 'failed', next_attempt_at: null };
      this.schedule(delay);
      return { ...d, attempts, next_attempt_at: now + delay };
    });
    if (unstored) {
      // its endpoint's slot is free at once; the endpoint is disabled once the outcome is stored
      const reason = disableReason;
      if (reason)
        void unstored.stored
          .then(() => this.deps.disable(delivery.endpoint_id, reason))
          .catch((error: unknown) =>
            this.deps.logger?.error({ err: error, endpoint: delivery.endpoint_id }, 'webhook endpoint not disabled'),
          );
      return;
    }
    await recorded;
    if (disableReason) await this.deps.disable(delivery.endpoint_id, disableReason);
  }

  /**
   * Records an attempt's outcome: resolves once it is stored. Outcomes that arrive before the
   * recording of earlier ones has started are recorded together (see recordOutcomes). The outcome
   * of a delivery not stored yet goes to its batch of first attempts, and this resolves at once.
   */
  private finish(id: string, outcome: Outcome['apply']): Promise<void> {
    const batch = this.unstored.get(id);
    if (batch) {
      // not stored yet: the publisher stores it with this outcome
      this.unstored.delete(id);
      batch.outcome(id, outcome);
      return Promise.resolve();
    }
    return new Promise<void>((done, failed) => {
      this.outcomes.push({ id, apply: outcome, done, failed });
      if (this.recordQueued) return;
      this.recordQueued = true;
      // after the I/O callbacks of this turn of the event loop: the answers that came in with it join the batch
      setImmediate(() => this.recordOutcomes());
    });
  }

  /**
   * Applies the waiting outcomes to their stored deliveries (exclusively, in one read and one
   * transaction); for each delivery that became final, the next delivery of its endpoint and
   * voucher is released. An outcome whose delivery is no longer pending (purged, or ended by an
   * attempt of a resend) changes nothing.
   */
  private recordOutcomes(): void {
    const { deliveries, clock } = this.deps;
    let batch: Outcome[] = [];
    deliveries
      .exclusive(async () => {
        this.recordQueued = false;
        batch = this.outcomes.splice(0);
        const current = await deliveries.getMany(batch.map((o) => o.id));
        const write: WriteBatch = { upserts: [], deletes: [] };
        const ended: DeliveryDoc[] = [];
        for (const { id, apply } of batch) {
          const doc = current.get(id);
          if (!doc || doc.status !== 'pending') continue;
          let next = apply(doc, write);
          if (this.resentInFlight.delete(id)) {
            // resent during this attempt: due again now (read from the store once this attempt has ended)
            const { failure_reason: _reason, ...rest } = next;
            next = { ...rest, status: 'pending', next_attempt_at: clock.now().getTime() };
            this.refillWanted = true;
          }
          write.upserts!.push({ collection: DELIVERIES, doc: next });
          if (next.status !== 'pending') ended.push(next);
        }
        const released = await deliveries.releaseNext(ended, clock.now().getTime());
        for (const doc of released) write.upserts!.push({ collection: DELIVERIES, doc });
        if (write.upserts!.length > 0) await deliveries.write(write);
        return released;
      })
      .then(
        (released) => {
          for (const outcome of batch) outcome.done();
          if (released.length > 0) this.enqueue(released);
        },
        (error: unknown) => {
          for (const outcome of batch) outcome.failed(error);
        },
      );
  }

  private async failingSinceOf(endpointId: string): Promise<number | null> {
    if (!this.failingSince.has(endpointId))
      this.failingSince.set(endpointId, (await this.deps.deliveries.health(endpointId))?.failing_since ?? null);
    return this.failingSince.get(endpointId) ?? null;
  }
}
