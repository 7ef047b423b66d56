import type { ExportEvent, OrderAttemptsRecorded } from '../domain/analytics/events.ts';
import type { OrderEvent } from '../domain/order/events.ts';
import type { WebhookEndpointEvent } from '../domain/webhooks/events.ts';
import type { VoucherCodeClaimed, VoucherStreamEvent } from '../domain/voucher/events.ts';

/**
 * Every event an environment's event store holds: vouchers and their code claims, orders,
 * validation telemetry, exports
 * and webhook endpoints. The store is typed on this union; each command handler and
 * projection reads the part of it that is its own.
 */
export type EnvironmentEvent =
  VoucherStreamEvent | VoucherCodeClaimed | OrderEvent | OrderAttemptsRecorded | ExportEvent | WebhookEndpointEvent;
