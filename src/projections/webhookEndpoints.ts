import type { PositionedEvent } from '../core/eventStore.ts';
import type { Projection } from '../core/projection.ts';
import type { WebhookEndpointEvent } from '../domain/webhooks/events.ts';

/** A webhook endpoint as GET /webhooks lists it: never its secret (that stays in the events). */
export interface WebhookEndpointDoc {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  metadata?: Record<string, string>;
  status: 'enabled' | 'disabled';
  disabled_reason?: string;
  created_at: string;
  updated_at: string;
  /** Global position of the creation: newest first. */
  created_seq: number;
  [key: string]: unknown;
}

const evolveDoc = (doc: WebhookEndpointDoc | null, event: PositionedEvent<WebhookEndpointEvent>) => {
  switch (event.type) {
    case 'WebhookEndpointCreated': {
      const d = event.data;
      return {
        id: d.endpointId,
        url: d.url,
        events: d.events,
        description: d.description,
        ...(d.metadata ? { metadata: d.metadata } : {}),
        status: 'enabled' as const,
        created_at: d.createdAt,
        updated_at: d.createdAt,
        created_seq: event.position,
      };
    }
    case 'WebhookEndpointUpdated': {
      if (!doc) return doc;
      const d = event.data;
      const { disabled_reason: _dropped, ...rest } = doc;
      const status = d.status ?? doc.status;
      const reason =
        status === 'disabled' ? (d.disabledReason ?? (d.status ? undefined : doc.disabled_reason)) : undefined;
      return {
        ...rest,
        url: d.url ?? doc.url,
        events: d.events ?? doc.events,
        description: d.description === undefined ? doc.description : d.description,
        ...(d.metadata !== undefined ? { metadata: d.metadata } : {}),
        status,
        ...(reason ? { disabled_reason: reason } : {}),
        updated_at: d.updatedAt,
      };
    }
    case 'WebhookSecretRotated':
      return doc && { ...doc, updated_at: event.data.rotatedAt };
    case 'WebhookEndpointDeleted':
      return null;
  }
};

export const webhookEndpoints: Projection<WebhookEndpointEvent, WebhookEndpointDoc> = {
  name: 'webhook_endpoints',
  collection: 'webhook_endpoints',
  handles: ['WebhookEndpointCreated', 'WebhookEndpointUpdated', 'WebhookSecretRotated', 'WebhookEndpointDeleted'],
  documentId: (event) => event.data.endpointId,
  evolve: evolveDoc,
  indexes: [['created_seq']],
};
