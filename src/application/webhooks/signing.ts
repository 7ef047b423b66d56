import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing: `v1,<base64 HMAC-SHA256 of "<msg id>.<timestamp>.<body>">`, keyed by
 * the secret's bytes (the base64 after `whsec_`). Several secrets (during a rotation): one
 * signature each, space-separated. Receivers verify with the `standardwebhooks` libraries; the
 * tests do exactly that rather than use this code.
 */
export const signature = (secret: string, msgId: string, timestamp: number, body: string): string => {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;
};

export const signatureHeader = (secrets: readonly string[], msgId: string, timestamp: number, body: string): string =>
  secrets.map((s) => signature(s, msgId, timestamp, body)).join(' ');
