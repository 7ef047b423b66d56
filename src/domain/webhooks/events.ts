/** The event types an endpoint can subscribe to (decisions.md, Webhooks); `*` subscribes to all. */
export const WEBHOOK_EVENT_TYPES = [
  'voucher.created',
  'voucher.updated',
  'voucher.deleted',
  'voucher.applied',
  'voucher.application_rolled_back',
  'voucher.expired',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** The event `POST /webhooks/{id}/test` sends; not subscribable. */
export const TEST_EVENT_TYPE = 'webhook.test';

export type EndpointStatus = 'enabled' | 'disabled';

/**
 * Events of an endpoint's stream `webhook-<endpointId>` in the environment's event store.
 * The signing secret is kept in the events (it must sign, so it cannot be a hash): see
 * docs/decisions/025-webhook-endpoints-as-events.md for how it is protected.
 */
export interface WebhookEndpointCreated {
  type: 'WebhookEndpointCreated';
  data: {
    endpointId: string;
    url: string;
    /** Event types, or ['*']. */
    events: string[];
    description: string | null;
    metadata?: Record<string, string>;
    secret: string;
    createdAt: string;
  };
}

export interface WebhookEndpointUpdated {
  type: 'WebhookEndpointUpdated';
  data: {
    endpointId: string;
    url?: string;
    events?: string[];
    description?: string | null;
    metadata?: Record<string, string>;
    status?: EndpointStatus;
    /** Why the service disabled it (absent when a caller changed it). */
    disabledReason?: string;
    updatedAt: string;
  };
}

export interface WebhookSecretRotated {
  type: 'WebhookSecretRotated';
  data: {
    endpointId: string;
    secret: string;
    /** Until when the previous secret keeps signing beside the new one. */
    previousExpiresAt: string;
    rotatedAt: string;
  };
}

export interface WebhookEndpointDeleted {
  type: 'WebhookEndpointDeleted';
  data: { endpointId: string; deletedAt: string };
}

export type WebhookEndpointEvent =
  WebhookEndpointCreated | WebhookEndpointUpdated | WebhookSecretRotated | WebhookEndpointDeleted;

/** Every type of WebhookEndpointEvent (a record, so that a type left out does not compile). */
const ENDPOINT_EVENT_TYPES: Record<WebhookEndpointEvent['type'], true> = {
  WebhookEndpointCreated: true,
  WebhookEndpointUpdated: true,
  WebhookSecretRotated: true,
  WebhookEndpointDeleted: true,
};
/** The types of the events that change an endpoint (those `changesEndpoint` tells apart on their streams). */
export const WEBHOOK_ENDPOINT_EVENT_TYPES: readonly string[] = Object.keys(ENDPOINT_EVENT_TYPES);

export const webhookStream = (endpointId: string): string => `webhook-${endpointId}`;

/** Whether an event of this type on this stream changes a webhook endpoint (also read off stored rows). */
export const changesEndpoint = (type: string, streamId: string): boolean =>
  type.startsWith('Webhook') && streamId.startsWith(webhookStream(''));

/** Does an endpoint subscribed to `events` receive `type`? */
export const subscribes = (events: readonly string[], type: string): boolean =>
  events.includes('*') || events.includes(type);
