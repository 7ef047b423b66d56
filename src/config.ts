import path from 'node:path';

/** Everything the service reads from its environment, read in one place. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: string;
  /** Full keys from VOUCHER_API_KEYS (comma-separated), accepted with all scopes. */
  apiKeys: string[];
  /** Longest wait for read models after a write before answering it. */
  readYourWritesMs: number;
  /** How often the expiry job looks for vouchers whose valid_until has passed. */
  expiryIntervalMs: number;
}

const integer = (raw: string | undefined, fallback: number, name: string): number => {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => ({
  port: integer(env.PORT, 3000, 'PORT'),
  host: env.HOST ?? '0.0.0.0',
  dataDir: path.resolve(env.DATA_DIR ?? './data'),
  logLevel: env.LOG_LEVEL ?? 'info',
  apiKeys: (env.VOUCHER_API_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean),
  readYourWritesMs: integer(env.READ_YOUR_WRITES_MS, 5_000, 'READ_YOUR_WRITES_MS'),
  // decisions.md: expiry is recorded within a minute, so the interval is capped at 60 s
  expiryIntervalMs: Math.min(60_000, Math.max(1_000, integer(env.EXPIRY_INTERVAL_MS, 30_000, 'EXPIRY_INTERVAL_MS'))),
});
