/** Time comes from an injected clock; nothing in the domain calls Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC with second precision, as the API renders timestamps: YYYY-MM-DDThh:mm:ssZ. */
export const isoSeconds = (date: Date): string => `${date.toISOString().slice(0, 19)}Z`;
