import type { RunnerLogger } from '../../core/projectionRunner.ts';
import type { WriteBatch } from '../../core/readStore.ts';
import { isoSeconds, type Clock } from '../../domain/clock.ts';
import { isSuccess, nextDelay, type Attempt, type Sender, type SendResult } from '../../domain/webhooks/delivery.ts';
import { signingSecrets } from '../../domain/webhooks/endpoint.ts';
import { DELIVERIES, HEALTH, type DeliveryDoc, type DeliveryStore, type HealthDoc } from './deliveryStore.ts';
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

/** Due deliveries asked for per pass. */
const PASS_SIZE = 200;

/**
 * Makes the attempts (decision 027): picks due deliveries, signs each attempt (Standard Webhooks,
 * every secret that signs at this moment), sends it through the `Sender` (which resolves and checks
 * the target at every attempt), and records the outcome: success, a retry on the schedule, or
 * failure for good, after which the next delivery of the same endpoint and voucher is released.
 * At most MAX_IN_FLIGHT_PER_ENDPOINT attempts run per endpoint; a voucher has at most one.
 */
export class WebhookDispatcher {
  private readonly inFlight = new Set<string>();
  private readonly perEndpoint = new Map<string, number>();
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<void>>();
  private timer: unknown;
  private timerAt = Infinity;
  private pumping = false;
  private again = false;
  private stopped = false;
  private readonly random: () => number;
  private readonly scheduler: Scheduler;

  constructor(private readonly deps: DispatcherDeps) {
    this.random = deps.random ?? Math.random;
    this.scheduler = deps.scheduler ?? systemScheduler;
  }

  start(): void {
    this.wake();
  }

  /** Looks for due deliveries now (new deliveries, a resend, a recovery). */
  wake(): void {
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

  /** Stops picking deliveries and aborts the attempts in flight: they are not recorded, so they are made again after a restart. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.scheduler.clearTimeout(this.timer);
    this.controller.abort();
    await Promise.allSettled([...this.running]);
  }

  private async pump(): Promise<void> {
    const now = this.deps.clock.now().getTime();
    const due = await this.deps.deliveries.due(now, PASS_SIZE + this.inFlight.size);
    for (const delivery of due) {
      if (this.stopped) return;
      if (this.inFlight.has(delivery.id)) continue;
      const busy = this.perEndpoint.get(delivery.endpoint_id) ?? 0;
      if (busy >= MAX_IN_FLIGHT_PER_ENDPOINT) continue;
      this.inFlight.add(delivery.id);
      this.perEndpoint.set(delivery.endpoint_id, busy + 1);
      const run = this.attempt(delivery)
        .catch((error: unknown) =>
          this.deps.logger?.error({ err: error, delivery: delivery.id }, 'webhook attempt failed'),
        )
        .finally(() => {
          this.inFlight.delete(delivery.id);
          this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 1) - 1);
          this.running.delete(run);
          this.wake();
        });
      this.running.add(run);
    }
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
        this.wake();
      },
      Math.max(0, delayMs),
    );
  }

  private async attempt(delivery: DeliveryDoc): Promise<void> {
    const { deliveries, clock, settings } = this.deps;
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
        'webhook-signature': signatureHeader(
          signingSecrets(endpoint, started),
          delivery.event_id,
          timestamp,
          delivery.payload,
        ),
      },
      body: delivery.payload,
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
    let disableReason: string | undefined;
    await this.finish(delivery.id, (d, write, health) => {
      const attempts = [...d.attempts, attempt];
      if (isSuccess(result)) {
        write.upserts!.push({ collection: HEALTH, doc: { id: d.endpoint_id, failing_since: null } });
        return { ...d, attempts, status: 'succeeded', next_attempt_at: null };
      }
      const failingSince = health?.failing_since ?? now;
      write.upserts!.push({ collection: HEALTH, doc: { id: d.endpoint_id, failing_since: failingSince } });
      if (result.status === 410) disableReason = 'the endpoint answered 410 Gone';
      else if (now - failingSince >= FAILING_DISABLE_MS) disableReason = 'every delivery failed for 5 days';
      const delay =
        result.status === 410 ? null : nextDelay(attempts.length, settings.retryDelaysMs, JITTER, this.random, result);
      if (delay === null) return { ...d, attempts, status: 'failed', next_attempt_at: null };
      return { ...d, attempts, next_attempt_at: now + delay };
    });
    if (disableReason) await this.deps.disable(delivery.endpoint_id, disableReason);
  }

  /**
   * Applies an outcome to the stored delivery (exclusively); when it became final, the next
   * delivery of its endpoint and voucher is released.
   */
  private finish(
    id: string,
    outcome: (d: DeliveryDoc, write: WriteBatch, health: HealthDoc | null) => DeliveryDoc,
  ): Promise<void> {
    const { deliveries, clock } = this.deps;
    return deliveries.exclusive(async () => {
      const current = await deliveries.get(id);
      if (!current || current.status !== 'pending') return;
      const write: WriteBatch = { upserts: [], deletes: [] };
      const health = await deliveries.health(current.endpoint_id);
      const next = outcome(current, write, health);
      write.upserts!.push({ collection: DELIVERIES, doc: next });
      if (next.status !== 'pending')
        await deliveries.releaseNext(current.endpoint_id, current.order_key, clock.now().getTime(), write);
      await deliveries.write(write);
    });
  }
}
