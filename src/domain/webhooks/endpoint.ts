import type { Decider } from '../../core/decider.ts';
import { DomainError, invalidRequest } from '../errors.ts';
import { isoSeconds } from '../clock.ts';
import { addressLiteral, refusedRange, type Cidr } from './targets.ts';
import { WEBHOOK_EVENT_TYPES, type EndpointStatus, type WebhookEndpointEvent } from './events.ts';

/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
export const MAX_URL_LENGTH = 2048;

export interface EndpointSecret {
  secret: string;
  /** Null: the current secret; else until when this previous one still signs. */
  expiresAt: string | null;
}

export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  metadata?: Record<string, string>;
  status: EndpointStatus;
  disabledReason?: string;
  /** Current secret first, then the previous ones still within their overlap. */
  secrets: EndpointSecret[];
  createdAt: string;
  updatedAt: string;
  deleted: boolean;
}

export type EndpointState = Endpoint | null;

/** What the URL rules need to know: the environment (https in production) and the operator's allowed CIDRs. */
export interface TargetPolicy {
  environment: 'sandbox' | 'production';
  allowedCidrs: readonly Cidr[];
}

interface Changes {
  url?: string;
  events?: string[];
  description?: string | null;
  metadata?: Record<string, string>;
  status?: EndpointStatus;
}

export type EndpointCommand =
  | {
      type: 'CreateEndpoint';
      data: Changes & { endpointId: string; url: string; events: string[]; secret: string };
      metadata: { now: Date; policy: TargetPolicy };
    }
  | { type: 'UpdateEndpoint'; data: Changes & { endpointId: string }; metadata: { now: Date; policy: TargetPolicy } }
  /** The service disables an endpoint (410 from the receiver, or 5 days of failures): no-op when not enabled. */
  | { type: 'DisableEndpoint'; data: { endpointId: string; reason: string }; metadata: { now: Date } }
  | { type: 'RotateSecret'; data: { endpointId: string; secret: string }; metadata: { now: Date } }
  | { type: 'DeleteEndpoint'; data: { endpointId: string }; metadata: { now: Date } };

export const endpointNotFound = (endpointId: string): DomainError =>
  new DomainError('WEBHOOK_NOT_FOUND', `Webhook endpoint ${endpointId} was not found`, { webhook_id: endpointId });

const live = (state: EndpointState, endpointId: string): Endpoint => {
  if (!state || state.deleted) throw endpointNotFound(endpointId);
  return state;
};

/** The URL rules: absolute http(s), https in production, no credentials, no refused address literal. */
export const checkUrl = (raw: string, policy: TargetPolicy): string => {
  const problem = (message: string) => invalidRequest([{ field: 'url', message }]);
  if (raw.length > MAX_URL_LENGTH) throw problem(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw problem('must be an absolute URL such as https://example.com/webhooks');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw problem('must use https (or http in sandbox)');
  if (url.protocol === 'http:' && policy.environment === 'production')
    throw problem('must use https in production (http is allowed in sandbox)');
  if (url.username || url.password) throw problem('must not carry credentials');
  if (url.hash) throw problem('must not have a fragment');
  const literal = addressLiteral(url.hostname);
  if (literal) {
    const range = refusedRange(literal, policy.allowedCidrs);
    if (range) throw problem(`points at a refused address (${literal} is ${range}); use a public address`);
  }
  return url.toString();
};

const checkEvents = (events: string[]): string[] => {
  if (events.length === 0) throw invalidRequest([{ field: 'events', message: 'must name at least one event type' }]);
  const known = new Set<string>([...WEBHOOK_EVENT_TYPES, '*']);
  const unknown = events.map((e, i) => [e, i] as const).filter(([e]) => !known.has(e));
  if (unknown.length > 0)
    throw invalidRequest(
      unknown.map(([e, i]) => ({
        field: `events[${i}]`,
        message: `is not an event type: "${e}" (one of ${WEBHOOK_EVENT_TYPES.join(', ')}, or *)`,
      })),
    );
  return [...new Set(events)];
};

export const decide = (command: EndpointCommand, state: EndpointState): WebhookEndpointEvent[] => {
  const at = isoSeconds(command.metadata.now);
  switch (command.type) {
    case 'CreateEndpoint': {
      if (state) throw new DomainError('INVALID_REQUEST', 'The endpoint exists already', []);
      const d = command.data;
      return [
        {
          type: 'WebhookEndpointCreated',
          data: {
            endpointId: d.endpointId,
            url: checkUrl(d.url, command.metadata.policy),
            events: checkEvents(d.events),
            description: d.description ?? null,
            ...(d.metadata ? { metadata: d.metadata } : {}),
            secret: d.secret,
            createdAt: at,
          },
        },
      ];
    }
    case 'UpdateEndpoint': {
      const endpoint = live(state, command.data.endpointId);
      const d = command.data;
      return [
        {
          type: 'WebhookEndpointUpdated',
          data: {
            endpointId: endpoint.id,
            ...(d.url !== undefined ? { url: checkUrl(d.url, command.metadata.policy) } : {}),
            ...(d.events !== undefined ? { events: checkEvents(d.events) } : {}),
            ...(d.description !== undefined ? { description: d.description } : {}),
            ...(d.metadata !== undefined ? { metadata: d.metadata } : {}),
            ...(d.status !== undefined ? { status: d.status } : {}),
            updatedAt: at,
          },
        },
      ];
    }
    case 'DisableEndpoint': {
      if (!state || state.deleted || state.status !== 'enabled') return [];
      return [
        {
          type: 'WebhookEndpointUpdated',
          data: {
            endpointId: state.id,
            status: 'disabled',
            disabledReason: command.data.reason,
            updatedAt: at,
          },
        },
      ];
    }
    case 'RotateSecret': {
      const endpoint = live(state, command.data.endpointId);
      return [
        {
          type: 'WebhookSecretRotated',
          data: {
            endpointId: endpoint.id,
            secret: command.data.secret,
            previousExpiresAt: isoSeconds(new Date(command.metadata.now.getTime() + SECRET_OVERLAP_MS)),
            rotatedAt: at,
          },
        },
      ];
    }
    case 'DeleteEndpoint': {
      const endpoint = live(state, command.data.endpointId);
      return [{ type: 'WebhookEndpointDeleted', data: { endpointId: endpoint.id, deletedAt: at } }];
    }
  }
};

export const evolve = (state: EndpointState, event: WebhookEndpointEvent): EndpointState => {
  switch (event.type) {
    case 'WebhookEndpointCreated': {
      const d = event.data;
      return {
        id: d.endpointId,
        url: d.url,
        events: d.events,
        description: d.description,
        ...(d.metadata ? { metadata: d.metadata } : {}),
        status: 'enabled',
        secrets: [{ secret: d.secret, expiresAt: null }],
        createdAt: d.createdAt,
        updatedAt: d.createdAt,
        deleted: false,
      };
    }
    case 'WebhookEndpointUpdated': {
      if (!state) return state;
      const d = event.data;
      const status = d.status ?? state.status;
      return {
        ...state,
        url: d.url ?? state.url,
        events: d.events ?? state.events,
        description: d.description === undefined ? state.description : d.description,
        ...(d.metadata !== undefined ? { metadata: d.metadata } : {}),
        status,
        disabledReason:
          status === 'disabled' ? (d.disabledReason ?? (d.status ? undefined : state.disabledReason)) : undefined,
        updatedAt: d.updatedAt,
      };
    }
    case 'WebhookSecretRotated': {
      if (!state) return state;
      const d = event.data;
      // the previous current secret keeps signing until previousExpiresAt; older ones are dropped
      // once past theirs (readers check expiresAt against their clock as well)
      const previous = state.secrets.filter((s) => s.expiresAt === null || s.expiresAt > d.rotatedAt);
      return {
        ...state,
        secrets: [
          { secret: d.secret, expiresAt: null },
          ...previous.map((s) => ({ secret: s.secret, expiresAt: s.expiresAt ?? d.previousExpiresAt })),
        ],
        updatedAt: d.rotatedAt,
      };
    }
    case 'WebhookEndpointDeleted':
      if (!state) return state;
      return { ...state, deleted: true, updatedAt: event.data.deletedAt };
  }
};

/** The secrets that sign at `now`: the current one and any previous one within its overlap. */
export const signingSecrets = (endpoint: Pick<Endpoint, 'secrets'>, now: Date): string[] => {
  const at = isoSeconds(now);
  return endpoint.secrets.filter((s) => s.expiresAt === null || s.expiresAt > at).map((s) => s.secret);
};

export const endpointDecider: Decider<EndpointCommand, WebhookEndpointEvent, EndpointState> = {
  decide,
  evolve,
  initialState: () => null,
};
