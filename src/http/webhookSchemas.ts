/**
 * JSON Schemas of the /webhooks requests: compiled by ajv in routes/webhooks.ts and put unchanged
 * in the OpenAPI document (openapiWebhooks.ts). The rules the schema cannot say (the URL's form
 * and address, https in production, known event types, a non-empty list) are the endpoint
 * decider's (domain/webhooks/endpoint.ts), which names the field the same way.
 */
import { WEBHOOK_EVENT_TYPES } from '../domain/webhooks/events.ts';
import { MAX_URL_LENGTH } from '../domain/webhooks/endpoint.ts';
import { timestamp } from './configSchemas.ts';

const url = {
  type: 'string',
  maxLength: MAX_URL_LENGTH,
  description: 'Absolute https URL (http allowed in sandbox); its host must not be a refused address',
} as const;
const events = {
  type: 'array',
  maxItems: 20,
  items: { type: 'string', maxLength: 64 },
  description: `Event types (${WEBHOOK_EVENT_TYPES.join(', ')}), or ["*"] for all; at least one`,
} as const;
const description = { type: ['string', 'null'], maxLength: 500 } as const;
const metadata = {
  type: 'object',
  maxProperties: 20,
  additionalProperties: { type: 'string', maxLength: 500 },
  description: 'Your own key-value pairs (strings), kept and shown back',
} as const;

export const createWebhookSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url', 'events'],
  properties: { url, events, description, metadata },
} as const;

export const updateWebhookSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { url, events, description, metadata, status: { type: 'string', enum: ['enabled', 'disabled'] } },
} as const;

export const deliveriesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
    offset: { type: 'integer', minimum: 0, default: 0 },
    status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
  },
} as const;

export const recoverSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['since'],
  properties: { since: { ...timestamp, description: 'Failed deliveries created at or after this time are re-queued' } },
} as const;

/** The operations that take no body: a body, if sent, must be empty (`{}`). */
export const noBodySchema = { type: 'object', additionalProperties: false, properties: {} } as const;
