/**
 * API keys across processes: the keys CLI (scripts/keys.ts, run as a real child process) and a
 * running service share DATA_DIR. A key revoked by the CLI stops working in the service within a
 * second, a key created there starts working within a second; the CLI's --json contract; keys are
 * stored only as hashes; the account store keeps the audit trail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { API_KEYS_STREAM } from '../../src/application/apiKeys.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { TestService } from '../support/harness.ts';
import { expectError } from '../support/httpClient.ts';
import { ROOT, sleep } from '../support/processes.ts';

const ISO_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
/** The requirement: another process's revocation (or creation) applies within this. */
const PROPAGATION_MS = 1_000;
const POLL_MS = 50;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Date.now() when the process exited. */
  exitedAt: number;
}

const children = new Set<ChildProcess>();

/** Runs a command in the project root with DATA_DIR set; resolves once it exited and its output is read. */
const run = (command: string, args: string[], dataDir: string): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
    delete env.VOUCHER_API_KEYS;
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    let exitedAt = 0;
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', () => {
      exitedAt = Date.now();
    });
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr, exitedAt: exitedAt || Date.now() });
    });
  });

/** `node --import tsx scripts/keys.ts …`, as the lead would run it. */
const keysCli = (dataDir: string, ...args: string[]): Promise<CliResult> =>
  run(process.execPath, ['--import', 'tsx', 'scripts/keys.ts', ...args], dataDir);

/** Asserts exit 0 and exactly one line of JSON on stdout; returns it parsed. */
const jsonLine = (result: CliResult): any => {
  expect(result.code, `exit code; stderr: ${result.stderr}`).to.equal(0);
  expect(result.stdout.endsWith('\n'), `stdout ends with a newline: ${JSON.stringify(result.stdout)}`).to.equal(true);
  const lines = result.stdout.slice(0, -1).split('\n');
  expect(lines, `one line on stdout: ${JSON.stringify(result.stdout)}`).to.have.length(1);
  return JSON.parse(lines[0]!);
};

/** Every file under `dir`, recursively, with its raw bytes. */
const readTree = (dir: string): Array<{ file: string; bytes: Buffer }> =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name);
      return { file: path.relative(dir, file), bytes: fs.readFileSync(file) };
    });

describe('API keys across processes (keys CLI as a child process)', function () {
  this.timeout(60_000);

  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all([...children].map((child) => new Promise((resolve) => child.once('close', resolve))));
  });

  describe('with the service running on the same DATA_DIR', () => {
    let service: TestService;
    let production: { id: string };

    before(async () => {
      service = await TestService.start();
      production = await service.createVoucher(fixedVoucher('LIVEONLY'), {
        key: (await service.embedded.keys.create('production', 'setup')).key,
      });
    });
    after(async () => {
      await service?.stop();
    });

    /**
     * Polls GET /v1/vouchers with `key` every 50 ms until it answers `expected`; the request that
     * first gets it must have been sent within a second of `from`. Statuses before it must be `other`.
     */
    const pollUntil = async (key: string, expected: number, other: number, from: number) => {
      const seen: number[] = [];
      for (;;) {
        const sentAt = Date.now();
        const res = await service.get('/v1/vouchers', { key });
        seen.push(res.status);
        if (res.status === expected) {
          expect(
            sentAt - from,
            `ms from the CLI's exit to the first ${expected} (statuses: ${seen.join(',')})`,
          ).to.be.at.most(PROPAGATION_MS);
          expect(
            seen.slice(0, -1).every((s) => s === other),
            `statuses before ${expected}: ${seen.join(',')}`,
          ).to.equal(true);
          return res;
        }
        if (Date.now() - from >= PROPAGATION_MS) {
          expect.fail(
            `still ${res.status} ${JSON.stringify(res.body)} ${Date.now() - from} ms after the CLI exited (statuses: ${seen.join(',')})`,
          );
        }
        await sleep(POLL_MS);
      }
    };

    it('a key revoked by the CLI is 401 INVALID_API_KEY in the running service within a second', async () => {
      const { key, record } = await service.embedded.keys.create(
        'sandbox',
        'Revoke me',
        ['vouchers:read', 'vouchers:write'],
        'test-suite',
      );
      const bystander = await service.embedded.keys.create('sandbox', 'Bystander', ['vouchers:read']);
      expect((await service.get('/v1/vouchers', { key })).status).to.equal(200);

      const cli = await keysCli(service.dataDir, 'revoke', record.id, '--json');
      const revoked = jsonLine(cli);
      expect(revoked.id).to.equal(record.id);
      expect(revoked.name).to.equal('Revoke me');
      expect(revoked.revoked_at).to.match(ISO_SECONDS);
      expect(revoked.revoked_by).to.equal('cli');

      const res = await pollUntil(key, 401, 200, cli.exitedAt);
      expectError(res, 401, 'INVALID_API_KEY', {});
      expect(service.embedded.keys.get(record.id)).to.deep.include({ revokedAt: revoked.revoked_at, revokedBy: 'cli' });
      // only that key: another key keeps working, and the revoked one stays revoked
      expect((await service.get('/v1/vouchers', { key: bystander.key })).status).to.equal(200);
      expectError(
        await service.post('/v1/vouchers', fixedVoucher('AFTERREVOKE', { value: 1 }), { key }),
        401,
        'INVALID_API_KEY',
        {},
      );

      // The audit trail: created by the suite, revoked by the CLI, with names, scopes and times.
      const events = (await service.embedded.account.events.readStream(API_KEYS_STREAM)).filter(
        (e) => e.data.id === record.id,
      );
      expect(events.map((e) => e.type)).to.deep.equal(['ApiKeyCreated', 'ApiKeyRevoked']);
      expect(events[0]!.data).to.deep.equal({
        id: record.id,
        name: 'Revoke me',
        environment: 'sandbox',
        scopes: ['vouchers:read', 'vouchers:write'],
        prefix: 'sk_test_',
        last4: key.slice(-4),
        hash: sha256(key),
        createdAt: '2026-01-15T12:00:00Z',
        createdBy: 'test-suite',
      });
      expect(events[1]!.data).to.deep.equal({ id: record.id, revokedAt: revoked.revoked_at, revokedBy: 'cli' });
    });

    it('a key created by the CLI works in the running service within a second, in its environment and scopes', async () => {
      const cli = await keysCli(
        service.dataDir,
        'create',
        '--env',
        'production',
        '--scopes',
        'vouchers:read',
        '--name',
        'From CLI',
        '--json',
      );
      const created = jsonLine(cli);
      expect(created.key).to.match(/^sk_live_[A-Za-z0-9]{32}$/);

      const res = await pollUntil(created.key, 200, 401, cli.exitedAt);
      expect((res.body.data as Array<{ id: string }>).map((v) => v.id)).to.include(production.id);
      expect((await service.get(`/v1/vouchers/${production.id}`, { key: created.key })).status).to.equal(200);
      expectError(
        await service.delete(`/v1/vouchers/${production.id}`, { key: created.key }),
        403,
        'INSUFFICIENT_PERMISSIONS',
        { required_scope: 'vouchers:delete' },
      );
      expect(service.embedded.keys.get(created.id)).to.deep.include({
        name: 'From CLI',
        environment: 'production',
        scopes: ['vouchers:read'],
        createdBy: 'cli',
      });

      const events = (await service.embedded.account.events.readStream(API_KEYS_STREAM)).filter(
        (e) => e.data.id === created.id,
      );
      expect(events.map((e) => e.type)).to.deep.equal(['ApiKeyCreated']);
      expect(events[0]!.data).to.deep.include({
        name: 'From CLI',
        environment: 'production',
        scopes: ['vouchers:read'],
        createdBy: 'cli',
        createdAt: created.created_at,
      });
    });

    it("the CLI's list shows the last use the service recorded", async () => {
      const { key, record } = await service.embedded.keys.create('sandbox', 'Used', ['vouchers:read']);
      service.clock.set('2026-01-15T12:34:56.700Z');
      expect((await service.get('/v1/vouchers', { key })).status).to.equal(200);
      const listed = (
        jsonLine(await keysCli(service.dataDir, 'list', '--json')) as Array<{ id: string; last_used_at: string | null }>
      ).find((k) => k.id === record.id);
      expect(listed?.last_used_at).to.equal('2026-01-15T12:34:56Z');
    });
  });

  describe('the keys CLI contract (--json: one line on stdout; exit 1 on errors, 2 on usage errors)', () => {
    let dataDir: string;
    let sandbox: { id: string; key: string };
    let production: { id: string; key: string };

    before(() => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-cli-'));
    });
    after(() => {
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const list = async (): Promise<any[]> => jsonLine(await keysCli(dataDir, 'list', '--json'));

    it('create --env sandbox --scopes … --name … --json prints exactly {id, key, name, environment, scopes, created_at}', async () => {
      const startedAt = Math.floor(Date.now() / 1000) * 1000;
      const result = await keysCli(
        dataDir,
        'create',
        '--env',
        'sandbox',
        '--scopes',
        'vouchers:read,vouchers:redeem',
        '--name',
        'Checkout',
        '--json',
      );
      const created = jsonLine(result);
      expect(result.stdout).to.equal(
        `${JSON.stringify({
          id: created.id,
          key: created.key,
          name: 'Checkout',
          environment: 'sandbox',
          scopes: ['vouchers:read', 'vouchers:redeem'],
          created_at: created.created_at,
        })}\n`,
      );
      expect(created.id).to.match(/^key_[A-Za-z0-9]{16}$/);
      expect(created.key).to.match(/^sk_test_[A-Za-z0-9]{32}$/);
      expect(created.created_at).to.match(ISO_SECONDS);
      expect(Date.parse(created.created_at)).to.be.within(startedAt, result.exitedAt);
      expect(result.stderr).to.not.include(created.key);
      sandbox = created;
    });

    it('create --env production gives an sk_live_ key with every scope, named "CLI key", scopes in canonical order', async () => {
      const created = jsonLine(await keysCli(dataDir, 'create', '--env', 'production', '--json'));
      expect(created.key).to.match(/^sk_live_[A-Za-z0-9]{32}$/);
      expect(created.environment).to.equal('production');
      expect(created.name).to.equal('CLI key');
      expect(created.scopes).to.deep.equal([
        'vouchers:read',
        'vouchers:write',
        'vouchers:delete',
        'vouchers:redeem',
        'analytics:read',
        'webhooks:manage',
      ]);
      production = created;
      const reordered = jsonLine(
        await keysCli(dataDir, 'create', '--env', 'sandbox', '--scopes', 'webhooks:manage, vouchers:read', '--json'),
      );
      expect(reordered.scopes).to.deep.equal(['vouchers:read', 'webhooks:manage']);
    });

    it('list --json is one JSON array line with hints, never a full key', async () => {
      expect(sandbox, 'the key created by the first test').to.not.equal(undefined);
      const result = await keysCli(dataDir, 'list', '--json');
      const listed = jsonLine(result) as Array<Record<string, unknown>>;
      expect(listed).to.be.an('array').with.length(3);
      for (const created of [sandbox, production]) {
        expect(result.stdout).to.not.include(created.key);
        expect(result.stdout).to.not.include(created.key.slice(8));
        expect(result.stdout).to.not.include(sha256(created.key));
      }
      const entry = listed.find((k) => k.id === sandbox.id)!;
      expect(entry).to.deep.equal({
        id: sandbox.id,
        name: 'Checkout',
        environment: 'sandbox',
        scopes: ['vouchers:read', 'vouchers:redeem'],
        key_hint: `sk_test_…${sandbox.key.slice(-4)}`,
        created_at: entry.created_at,
        created_by: 'cli',
        last_used_at: null,
        revoked_at: null,
        revoked_by: null,
      });
      expect(listed.find((k) => k.id === production.id)!.key_hint).to.equal(`sk_live_…${production.key.slice(-4)}`);
    });

    it('revoke <id> --json prints the revoked key on one line; again, the same revocation', async () => {
      const first = jsonLine(await keysCli(dataDir, 'revoke', production.id, '--json'));
      expect(first).to.deep.include({ id: production.id, environment: 'production', revoked_by: 'cli' });
      expect(first.revoked_at).to.match(ISO_SECONDS);
      expect(JSON.stringify(first)).to.not.include(production.key);
      const again = jsonLine(await keysCli(dataDir, 'revoke', production.id, '--json'));
      expect(again.revoked_at).to.equal(first.revoked_at);
      expect((await list()).find((k) => k.id === production.id).revoked_at).to.equal(first.revoked_at);
    });

    it('revoke of an unknown id exits 1 with a message on stderr and nothing on stdout', async () => {
      const result = await keysCli(dataDir, 'revoke', 'key_NoSuchKey000000', '--json');
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal('');
      expect(result.stderr).to.include('key_NoSuchKey000000');
    });

    const USAGE_ERRORS: Array<[string, string[]]> = [
      ['create without --env', ['create', '--json']],
      ['create with an unknown environment', ['create', '--env', 'staging', '--json']],
      [
        'create with an unknown scope',
        ['create', '--env', 'sandbox', '--scopes', 'vouchers:read,vouchers:admin', '--json'],
      ],
      ['create with an empty scope list', ['create', '--env', 'sandbox', '--scopes', '', '--json']],
      ['an unknown option', ['create', '--env', 'sandbox', '--admin', '--json']],
      ['an unknown command', ['rotate', '--json']],
      ['no command', ['--json']],
      ['revoke without an id', ['revoke', '--json']],
    ];
    for (const [what, args] of USAGE_ERRORS) {
      it(`exits 2 on a usage error: ${what} (usage on stderr, nothing on stdout)`, async () => {
        const result = await keysCli(dataDir, ...args);
        expect(result.code, result.stderr).to.equal(2);
        expect(result.stdout).to.equal('');
        expect(result.stderr).to.include('usage:');
      });
    }

    it('made no key on any error: still the three keys created above', async () => {
      expect((await list()).map((k) => k.id))
        .to.include.members([sandbox.id, production.id])
        .and.have.length(3);
    });

    it('runs through npm as documented: npm run -s keys -- list --json prints one JSON line', async () => {
      const result = await run('npm', ['run', '-s', 'keys', '--', 'list', '--json'], dataDir);
      const listed = jsonLine(result) as Array<{ id: string }>;
      expect(listed.map((k) => k.id)).to.have.members((await list()).map((k) => k.id));
      expect(listed.map((k) => k.id)).to.include(sandbox.id);
    });
  });

  describe('keys are stored only as hashes', () => {
    let service: TestService | undefined;
    let dataDir: string;

    after(async () => {
      await service?.stop();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const expectOnlyHashes = (keys: string[], when: string): void => {
      const files = readTree(dataDir);
      const names = files.map((f) => f.file);
      expect(names, when).to.include(path.join('account', 'events.db'));
      const account = Buffer.concat(files.filter((f) => f.file.startsWith(`account${path.sep}`)).map((f) => f.bytes));
      for (const key of keys) {
        for (const { file, bytes } of files) {
          for (const [form, needle] of [
            ['key', key],
            ['random part', key.slice(8)],
            ['base64', Buffer.from(key).toString('base64')],
            ['hex', Buffer.from(key).toString('hex')],
          ]) {
            expect(bytes.includes(needle!), `${when}: the ${form} of ${key.slice(0, 12)}… occurs in ${file}`).to.equal(
              false,
            );
          }
        }
        expect(
          account.includes(sha256(key)),
          `${when}: the SHA-256 of ${key.slice(0, 12)}… is in the account store`,
        ).to.equal(true);
      }
    };

    it('no file under DATA_DIR holds a full key (WAL included, while running and after shutdown); the account store holds its SHA-256', async () => {
      service = await TestService.start();
      dataDir = service.dataDir;
      const inProcess = await service.embedded.keys.create('sandbox', 'in process');
      const production = await service.embedded.keys.create('production', 'in process, live', [
        'vouchers:write',
        'vouchers:read',
      ]);
      const fromCli = jsonLine(await keysCli(dataDir, 'create', '--env', 'sandbox', '--name', 'cli', '--json'));
      // used too: last use, idempotency records, vouchers and their events are written with the key in hand
      expect(
        (
          await service.post('/v1/vouchers', fixedVoucher('HASHED'), {
            key: inProcess.key,
            headers: { 'Idempotency-Key': 'hash-check-1' },
          })
        ).status,
      ).to.equal(201);
      expect((await service.post('/v1/vouchers', fixedVoucher('HASHEDLIVE'), { key: production.key })).status).to.equal(
        201,
      );
      for (const { key } of [inProcess, production, fromCli]) await service.get('/v1/vouchers', { key });
      const keys = [inProcess.key, production.key, fromCli.key as string];

      expect(
        readTree(dataDir).some((f) => f.file.endsWith('-wal')),
        'a WAL file exists while running',
      ).to.equal(true);
      expectOnlyHashes(keys, 'while running');

      await service.stop(true);
      service = undefined;
      expectOnlyHashes(keys, 'after shutdown');
    });
  });
});
