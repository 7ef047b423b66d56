/**
 * Durability, end to end with the real process: every write the service acknowledged survives a
 * SIGKILL (no graceful shutdown), and `npm run replay` rebuilds read models identical to the ones
 * the live projector kept.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ANALYTICS_CHECKPOINT, CORE_CHECKPOINT } from '../../projections/index.ts';
import type { Environment } from '../../src/application/context.ts';
import { ENVIRONMENTS, environmentFiles } from '../../src/composition.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { exitWithin, killAll, run, startService as startServiceProcess, type RunningService } from '../support/processes.ts';

const KEYS: Record<Environment, string> = {
  sandbox: 'sk_test_Dur4bility0Sandbox0Key000000001',
  production: 'sk_live_Dur4bility0Production0Key00001',
};
const ORDERS = 40;
const VOUCHERS: Array<{ environment: Environment; code: string }> = [
  { environment: 'sandbox', code: 'DURABLE-A' },
  { environment: 'sandbox', code: 'DURABLE-B' },
  { environment: 'sandbox', code: 'DURABLE-C' },
  { environment: 'production', code: 'DURABLE-D' },
  { environment: 'production', code: 'DURABLE-E' },
];

type Service = RunningService;

const startService = (dataDir: string): Promise<Service> =>
  startServiceProcess({ DATA_DIR: dataDir, VOUCHER_API_KEYS: `${KEYS.sandbox},${KEYS.production}` });

interface Reply { status: number; body: any }

const call = async (service: Service, environment: Environment, method: string, urlPath: string, body?: unknown): Promise<Reply> => {
  const res = await fetch(`${service.base}${urlPath}`, {
    method,
    headers: { Authorization: `Bearer ${KEYS[environment]}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

type Snapshot = Record<Environment, { vouchers: unknown[]; applications: unknown[]; checkpoint: number }>;

/** Every document of the core read models, read straight from the files. */
const snapshotReadModels = async (dataDir: string): Promise<Snapshot> => {
  const out = {} as Snapshot;
  for (const environment of ENVIRONMENTS) {
    const reads = SqliteReadStore.open(environmentFiles(dataDir, environment).reads);
    try {
      out[environment] = {
        vouchers: await reads.find('vouchers', {}, { sort: [['id', 1]] }),
        applications: await reads.find('applications', {}, { sort: [['id', 1]] }),
        checkpoint: await reads.getCheckpoint(CORE_CHECKPOINT),
      };
    } finally {
      await reads.close();
    }
  }
  return out;
};

interface Ack { voucher: number; orderId: string; applicationId: string }

describe('durability (real process, SIGKILL, replay)', function () {
  this.timeout(120_000);

  let dataDir: string;
  const voucherIds: string[] = [];
  const acks: Ack[] = [];
  const failures: Array<{ orderId: string; status: number; body: unknown }> = [];
  let rolledBack: Ack;
  const deactivated = 4;
  let restarted: Service | undefined;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-durability-'));
    const service = await startService(dataDir);

    for (const v of VOUCHERS) {
      const res = await call(service, v.environment, 'POST', '/v1/vouchers', { code: v.code, type: 'percentage', value: 10 });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      voucherIds.push(res.body.id);
    }

    const replies = await Promise.all(Array.from({ length: ORDERS }, async (_, i) => {
      const voucher = i % VOUCHERS.length;
      const orderId = `order-${String(i).padStart(3, '0')}`;
      const res = await call(service, VOUCHERS[voucher]!.environment, 'POST', '/v1/vouchers/apply', {
        code: VOUCHERS[voucher]!.code, order_id: orderId, order: { value: 10_000 + i * 100, currency: 'USD' },
      }).catch((error: unknown) => ({ status: 0, body: String(error) }));
      return { voucher, orderId, res };
    }));
    for (const { voucher, orderId, res } of replies) {
      if (res.status >= 200 && res.status < 300) acks.push({ voucher, orderId, applicationId: res.body.id });
      else failures.push({ orderId, status: res.status, body: res.body });
    }
    // The checks below need applications on every voucher (one to roll back, one on the deactivated one).
    for (let v = 0; v < VOUCHERS.length; v += 1) {
      expect(acks.filter((a) => a.voucher === v), `acknowledged on voucher ${v}; failures ${JSON.stringify(failures)}`).to.have.length.above(1);
    }

    rolledBack = acks.find((a) => a.voucher === 0)!;
    const rollback = await call(service, 'sandbox', 'POST', `/v1/vouchers/applications/${rolledBack.applicationId}/rollback`, { reason: 'order cancelled' });
    expect(rollback.status, JSON.stringify(rollback.body)).to.equal(200);
    const deactivate = await call(service, VOUCHERS[deactivated]!.environment, 'DELETE', `/v1/vouchers/${voucherIds[deactivated]}`);
    expect(deactivate.status, JSON.stringify(deactivate.body)).to.equal(200);

    // Right after the last acknowledgement: no graceful shutdown, no flush, no close.
    service.proc.child.kill('SIGKILL');
    const exit = await exitWithin(service.proc, 10_000);
    expect(exit.signal).to.equal('SIGKILL');
  });

  after(async () => {
    await killAll();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps every acknowledged voucher, application, rollback and deactivation across a SIGKILL', async () => {
    restarted = await startService(dataDir);
    for (let v = 0; v < VOUCHERS.length; v += 1) {
      const { environment, code } = VOUCHERS[v]!;
      const mine = acks.filter((a) => a.voucher === v);
      const expectedUses = mine.length - (v === rolledBack.voucher ? 1 : 0);

      const res = await call(restarted, environment, 'GET', `/v1/vouchers/${voucherIds[v]}`);
      expect(res.status, `${code}: ${JSON.stringify(res.body)}`).to.equal(200);
      expect(res.body.code).to.equal(code);
      expect(res.body.usage_count, code).to.equal(expectedUses);
      expect(res.body.status, code).to.equal(v === deactivated ? 'inactive' : 'active');
      const history = res.body.usage_history as Array<{ id: string; order_id: string; status: string }>;
      expect(history.map((h) => h.order_id), code).to.have.members(mine.map((a) => a.orderId));
      expect(history.map((h) => h.id), code).to.have.members(mine.map((a) => a.applicationId));
      for (const h of history) expect(h.status, `${code} ${h.order_id}`).to.equal(h.id === rolledBack.applicationId ? 'rolled_back' : 'applied');

      const listed = await call(restarted, environment, 'GET', `/v1/vouchers/${voucherIds[v]}/applications?limit=100`);
      expect(listed.status).to.equal(200);
      expect(listed.body.total, code).to.equal(mine.length);
    }
    // The other environment does not see them: each environment has its own files.
    const crossed = await call(restarted, 'production', 'GET', `/v1/vouchers/${voucherIds[0]}`);
    expect(crossed.status).to.equal(404);
  });

  it('every application on the log has its order record, committed with it (adjacent positions), and nothing pending', async () => {
    for (const environment of ENVIRONMENTS) {
      const events = SqliteEventStore.open(environmentFiles(dataDir, environment).events);
      try {
        const all = await events.readAll();
        const byPosition = new Map(all.map((e) => [e.position, e]));
        const applied = all.filter((e) => e.type === 'VoucherApplied');
        expect(applied.length, environment).to.be.above(0);
        for (const a of applied) {
          const data = a.data as { applicationId: string; orderId: string; discountAmount: number };
          const next = byPosition.get(a.position + 1);
          expect(next?.streamId, data.orderId).to.equal(`order-${data.orderId}`);
          expect(next?.type).to.equal('OrderVoucherConfirmed');
          expect(next?.data).to.include({ applicationId: data.applicationId, discountAmount: data.discountAmount });
        }
        expect(all.filter((e) => e.type === 'OrderVoucherAttached')).to.deep.equal([]);
        expect(all.filter((e) => e.type === 'OrderVoucherConfirmed')).to.have.length(applied.length);
      } finally {
        await events.close();
      }
    }
  });

  it('rebuilds read models identical to the live ones with npm run replay', async () => {
    expect(restarted, 'the restarted service from the previous test').to.not.equal(undefined);
    restarted!.proc.child.kill('SIGTERM');
    const stopped = await exitWithin(restarted!.proc, 15_000);
    expect(stopped.code, restarted!.proc.output()).to.equal(0);

    const before = await snapshotReadModels(dataDir);
    expect(before.sandbox.vouchers).to.have.length(3);
    expect(before.production.vouchers).to.have.length(2);
    expect(before.sandbox.applications.length + before.production.applications.length).to.equal(acks.length);

    // Damage the read models so that a replay that did nothing could not pass.
    const sandboxReads = SqliteReadStore.open(environmentFiles(dataDir, 'sandbox').reads);
    const productionReads = SqliteReadStore.open(environmentFiles(dataDir, 'production').reads);
    try {
      await sandboxReads.writeBatch({
        upserts: [
          { collection: 'vouchers', doc: { id: 'v_Ghost', code: 'GHOST', usage_count: 1 } },
          { collection: 'vouchers', doc: { ...(before.sandbox.vouchers[0] as { id: string }), usage_count: 999 } },
        ],
        checkpoint: { name: CORE_CHECKPOINT, position: 1 },
      });
      await productionReads.writeBatch({ deletes: [{ collection: 'applications', id: (before.production.applications[0] as { id: string }).id }] });
    } finally {
      await sandboxReads.close();
      await productionReads.close();
    }
    // And the analytics read models, in their own file: all gone.
    for (const environment of ENVIRONMENTS) {
      const analytics = SqliteReadStore.open(environmentFiles(dataDir, environment).analytics);
      try { await analytics.reset(['analytics_daily'], ANALYTICS_CHECKPOINT); } finally { await analytics.close(); }
    }
    expect(await snapshotReadModels(dataDir)).to.not.deep.equal(before);

    const logSizes = {} as Record<Environment, number>;
    for (const environment of ENVIRONMENTS) {
      const events = SqliteEventStore.open(environmentFiles(dataDir, environment).events);
      try { logSizes[environment] = (await events.readAll()).length; } finally { await events.close(); }
    }

    const replay = run(['scripts/replay.ts'], { DATA_DIR: dataDir });
    const result = await exitWithin(replay, 60_000);
    expect(result.code, replay.output()).to.equal(0);
    // Not a terminal: one plain line per environment instead of a progress bar.
    expect(replay.output()).to.include(`sandbox: replayed ${logSizes.sandbox} events`);
    expect(replay.output()).to.include(`production: replayed ${logSizes.production} events`);
    expect(replay.output()).to.include('warning: stop the voucher service');

    const after = await snapshotReadModels(dataDir);
    expect(after).to.deep.equal(before);
    // The analytics group is rebuilt in analytics.db: its daily documents count every live use.
    for (const environment of ENVIRONMENTS) {
      const analytics = SqliteReadStore.open(environmentFiles(dataDir, environment).analytics);
      try {
        const daily = await analytics.find<{ id: string; uses: number }>('analytics_daily');
        const live = (after[environment].applications as Array<{ status: string }>).filter((a) => a.status === 'applied').length;
        expect(daily.reduce((n, d) => n + d.uses, 0), environment).to.equal(live);
        expect(await analytics.getCheckpoint(ANALYTICS_CHECKPOINT), environment).to.equal(after[environment].checkpoint);
      } finally {
        await analytics.close();
      }
    }
  });
});
