/**
 * A voucher event as the publisher puts it on the bus (decision 051): the webhook event (id, type,
 * time, the exact body every attempt sends), its position in the environment's log, its voucher
 * (the message key), and the endpoints subscribed to it at that position of the log.
 */
export interface PublishedEvent {
  event_id: string;
  type: string;
  created_at: string;
  payload: string;
  /** The event's position in the environment's log: deliveries of one key go out in this order. */
  seq: number;
  voucher_id: string;
  /** Ids of the endpoints enabled and subscribed to `type` at `seq`. */
  endpoints: string[];
}

export const encodePublishedEvent = (event: PublishedEvent): string => JSON.stringify(event);

/** The published event in a message's value, or null when the value is not one. */
export const decodePublishedEvent = (value: string): PublishedEvent | null => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  const e = parsed as Partial<PublishedEvent> | null;
  const ok =
    typeof e === 'object' &&
    e !== null &&
    typeof e.event_id === 'string' &&
    typeof e.type === 'string' &&
    typeof e.created_at === 'string' &&
    typeof e.payload === 'string' &&
    typeof e.seq === 'number' &&
    typeof e.voucher_id === 'string' &&
    Array.isArray(e.endpoints) &&
    e.endpoints.every((id) => typeof id === 'string');
  return ok ? (e as PublishedEvent) : null;
};
