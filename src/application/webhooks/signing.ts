import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/** Keys decoded from secrets, up to this many (then started afresh): an endpoint signs with one or two. */
const MAX_KEYS = 1_024;
const keys = new Map<string, KeyObject>();

/** The HMAC key of a secret: the bytes of the base64 after `whsec_`, decoded once per secret. */
const keyOf = (secret: string): KeyObject => {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(secret, key);
  }
  return key;
};

/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA256 of "<msg id>.<timestamp>.<body>">`, keyed by
 * the secret's bytes (the base64 after `whsec_`). Several secrets (during a rotation): one
 * signature each, space-separated. Receivers verify with the `standardwebhooks` libraries; the
 * tests do exactly that rather than use this code.
 */
export const signature = (secret: string, msgId: string, timestamp: number, body: string): string =>
  `v1,${createHmac('sha256', keyOf(secret)).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;

export const signatureHeader = (secrets: readonly string[], msgId: string, timestamp: number, body: string): string =>
  secrets.map((s) => signature(s, msgId, timestamp, body)).join(' ');
