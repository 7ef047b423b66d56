import type { Clock } from '../domain/clock.ts';
import type { VoucherStreamEvent } from '../domain/voucher/events.ts';
import type { VoucherState } from '../domain/voucher/state.ts';
import type { OrderEvent } from '../domain/order/events.ts';
import type { OrderState } from '../domain/order/state.ts';
import type { EventStore } from '../core/eventStore.ts';
import type { EnvironmentEvent } from './events.ts';
import type { VoucherCommand } from '../domain/voucher/commands.ts';
import type { OrderCommand } from '../domain/order/decide.ts';
import type { SnapshotStore } from '../core/snapshotStore.ts';
import type { KvStore } from '../core/kvStore.ts';
import type { ProjectorHandle } from '../core/projectionRunner.ts';
import type { ReadStore } from '../core/readStore.ts';
import type { CodeRegistry } from './codeRegistry.ts';
import type { CommandHandler } from '../core/commandHandler.ts';
import type { IdGenerator } from './ids.ts';
import type { ExportJobs } from './exports/jobs.ts';
import type { AttemptRecorder } from './telemetry.ts';
import type { Quotas } from './quotas.ts';
import type { EndpointCommand, EndpointState, TargetPolicy } from '../domain/webhooks/endpoint.ts';
import type { WebhookEndpointEvent } from '../domain/webhooks/events.ts';
import type { DeliveryControl, DeliveryStore } from './webhooks/deliveryStore.ts';

/** An environment's webhooks: endpoint streams `webhook-<id>`, the URL rules, the publisher and deliveries. */
export interface WebhookContext {
  endpoints: CommandHandler<EndpointCommand, WebhookEndpointEvent, EndpointState, EnvironmentEvent>;
  /** The environment and the operator's allowed CIDRs (WEBHOOK_ALLOWED_CIDRS). */
  policy: TargetPolicy;
  /** The publisher's progress through the log (absent where none runs). */
  publisher?: ProjectorHandle;
  /** The deliveries (webhooks store), for reading. */
  deliveries?: DeliveryStore;
  /** The API's changes to deliveries, made where the dispatcher runs. */
  control?: DeliveryControl;
  /** Stops the publisher and the dispatcher (attempts in flight are made again after a restart). */
  stop?(): Promise<void>;
}

export type Environment = 'sandbox' | 'production';

export type ApplyMode = 'atomic' | 'two-append';
export const APPLY_MODES: readonly ApplyMode[] = ['atomic', 'two-append'];

/**
 * Called between the appends of a two-append apply; throwing stops the apply there, as a crash of
 * the process would (tests of the crash windows).
 */
export interface ApplyHooks {
  /** After the order's reservation is durable, before the voucher decides. */
  afterReserve?(orderId: string, applicationId: string): void;
  /** After the voucher's VoucherApplied is durable, before the order's confirmation. */
  afterApply?(orderId: string, applicationId: string): void;
}

/** Everything a use case needs for one environment; built only by the composition root. */
export interface EnvContext {
  environment: Environment;
  events: EventStore<EnvironmentEvent>;
  /** The core group's read models: vouchers, usage counts, usage history. */
  reads: ReadStore;
  /** The analytics group's read models: analytics aggregates and export records. */
  analyticsReads: ReadStore;
  kv: KvStore;
  /** Where voucher snapshots are kept (absent: none are); closed with the environment. */
  snapshots?: SnapshotStore;
  vouchers: CommandHandler<VoucherCommand, VoucherStreamEvent, VoucherState, EnvironmentEvent>;
  /**
   * How apply writes the voucher's and the order's records (application/orders.ts): `atomic`, in
   * one append to both streams; `two-append`, with single-stream appends only (reserve on the
   * order, apply on the voucher, confirm on the order), for stores without an atomic
   * multi-stream append.
   */
  applyMode: ApplyMode;
  /** Test seams between the appends of a two-append apply (absent in service). */
  applyHooks?: ApplyHooks;
  /** Order streams `order-<orderId>`: the vouchers each order carries (stacking, see orders.ts). */
  orders: CommandHandler<OrderCommand, OrderEvent, OrderState, EnvironmentEvent>;
  codes: CodeRegistry;
  projector: ProjectorHandle;
  clock: Clock;
  ids: IdGenerator;
  /** Longest wait for the read models to reflect a write before answering it. */
  readYourWritesMs: number;
  /** The analytics projection group (own checkpoint): analytics aggregates and export records. */
  analytics: ProjectorHandle;
  /** Buffered order-attempt telemetry, written by validate. */
  telemetry: AttemptRecorder;
  /** Background export jobs and their files (DATA_DIR/<env>/exports). */
  exports: ExportJobs;
  /** Per-API-key quotas on what a key leaves stored: quotes here, exports in `exports`. */
  quotas: Quotas;
  /** Webhook endpoints and their deliveries. */
  webhooks: WebhookContext;
}

/** Who caused a command: stored as event metadata. */
export interface CallMetadata {
  correlationId?: string;
  apiKeyId?: string;
}

export const QUOTE_TTL_MS = 30 * 60 * 1000;
export const quoteKey = (voucherId: string, orderId: string): string => `${voucherId}:${orderId}`;
