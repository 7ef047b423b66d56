/**
 * API key management against the account's stores, safe while the service runs: DATA_DIR's
 * (SQLite in WAL mode), or the servers' when EVENTSTORE_URL / MONGODB_URL are set. The service
 * follows the key events, so a revocation takes effect there within a second.
 *
 *   npm run keys -- create --env sandbox|production [--scopes a,b] [--name N] [--json]
 *   npm run keys -- list [--json]
 *   npm run keys -- revoke <key id> [--json]
 *
 * With --json, stdout carries exactly one line of JSON and nothing else (use `npm run -s keys`,
 * since npm itself prints a banner on stdout otherwise). Errors go to stderr with exit code 1
 * (2 for a usage error).
 *
 * `create` prints the new key on stdout, unlike the service (which keeps secrets off its log
 * stream, src/welcome.ts): this CLI has no log; its stdout is the answer to whoever ran it.
 */
import { parseArgs } from 'node:util';
import { ALL_SCOPES, isScope, type ApiKeyRecord, type Scope } from '../src/application/apiKeys.ts';
import { openAccount, openServers } from '../src/composition.ts';
import { loadConfig } from '../src/config.ts';
import { systemClock } from '../src/domain/clock.ts';
import { DomainError } from '../src/domain/errors.ts';

const USAGE = `usage:
  npm run keys -- create --env sandbox|production [--scopes ${ALL_SCOPES.join(',')}] [--name NAME] [--json]
  npm run keys -- list [--json]
  npm run keys -- revoke <key id> [--json]`;

class UsageError extends Error {}

const summary = (r: ApiKeyRecord) => ({
  id: r.id,
  name: r.name,
  environment: r.environment,
  scopes: r.scopes,
  key_hint: `${r.prefix}…${r.last4}`,
  created_at: r.createdAt,
  created_by: r.createdBy,
  last_used_at: r.lastUsedAt ?? null,
  revoked_at: r.revokedAt ?? null,
  revoked_by: r.revokedBy ?? null,
});

const parseScopes = (raw: string | undefined): Scope[] => {
  if (raw === undefined) return [...ALL_SCOPES];
  const scopes = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0 || scopes.length === 0)
    throw new UsageError(`unknown scope(s): ${unknown.join(', ') || '(none given)'}; known: ${ALL_SCOPES.join(', ')}`);
  return scopes as Scope[];
};

const run = async (argv: string[]): Promise<void> => {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      env: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const [command, ...rest] = positionals;
  const print = (json: unknown, text: string) => process.stdout.write(`${values.json ? JSON.stringify(json) : text}\n`);
  // Every usage check comes before the store is opened: a typo creates no files.
  if (!['create', 'list', 'revoke'].includes(command ?? ''))
    throw new UsageError(command ? `unknown command ${command}` : 'no command given');
  if (command === 'create' && values.env !== 'sandbox' && values.env !== 'production')
    throw new UsageError('--env must be sandbox or production');
  const scopes = command === 'create' ? parseScopes(values.scopes) : [];
  if (command === 'revoke' && rest.length !== 1) throw new UsageError('revoke takes exactly one key id');
  // The account's stores where the service keeps them: on the servers when EVENTSTORE_URL / MONGODB_URL are set.
  const config = loadConfig();
  const servers = await openServers(config, systemClock);
  const { account, keys } = await openAccount(config.dataDir, systemClock, [], servers);
  try {
    if (command === 'create') {
      const { key, record } = await keys.create(
        values.env as 'sandbox' | 'production',
        values.name ?? 'CLI key',
        scopes,
        'cli',
      );
      print(
        {
          id: record.id,
          key,
          name: record.name,
          environment: record.environment,
          scopes: record.scopes,
          created_at: record.createdAt,
        },
        `Created ${record.environment} key ${record.id} (${record.name}), scopes ${record.scopes.join(', ')}.\n` +
          `The key is shown only now; store it safely:\n\n  ${key}\n`,
      );
    } else if (command === 'list') {
      const list = keys
        .list()
        .filter((r) => !r.id.startsWith('key_cfg_'))
        .map(summary);
      print(
        list,
        list.length === 0
          ? 'No keys.'
          : list
              .map(
                (k) =>
                  `${k.id}  ${k.environment.padEnd(10)} ${k.key_hint}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}  ${k.name}  [${k.scopes.join(' ')}]`,
              )
              .join('\n'),
      );
    } else {
      const record = await keys.revoke(rest[0]!, 'cli');
      print(summary(record), `Revoked ${record.id} (${record.name}) at ${record.revokedAt}.`);
    }
  } finally {
    await account.events.close();
    await account.kv.close();
    await servers.close();
  }
};

run(process.argv.slice(2)).catch((error: unknown) => {
  const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  const message = error instanceof DomainError || error instanceof Error ? error.message : String(error);
  process.stderr.write(`keys: ${message}\n${usage ? `${USAGE}\n` : ''}`);
  process.exit(usage ? 2 : 1);
});
