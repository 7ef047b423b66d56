/**
 * Durability, end to end with the real process: every write the service acknowledged survives a
 * SIGKILL (no graceful shutdown), and `npm run replay` rebuilds read models identical to the ones
 * the live projector kept.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ANALYTICS_CHECKPOINT, ANALYTICS_GROUP, CORE_CHECKPOINT, CORE_GROUP } from '../../src/projections/index.ts';
import { APPLY_MODES, type ApplyMode, type Environment } from '../../src/application/context.ts';
import { ENVIRONMENTS, environmentFiles } from '../../src/composition.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { collectionsOf } from '../../src/core/projection.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { rollbackBody } from '../fixtures/orders.ts';
import { percentageVoucher } from '../fixtures/vouchers.ts';
import {
  exitWithin,
  killAll,
  run,
  startService as startServiceProcess,
  type RunningService,
} from '../support/processes.ts';

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

const startService = (dataDir: string, applyMode: ApplyMode): Promise<Service> =>
  startServiceProcess({
    DATA_DIR: dataDir,
    VOUCHER_API_KEYS: `${KEYS.sandbox},${KEYS.production}`,
    APPLY_MODE: applyMode,
    // vouchers loaded from snapshots and keys on demand after the first three events
    SNAPSHOT_EVERY: '3',
  });

interface Reply {
  status: number;
  body: any;
}

const call = async (
  service: Service,
  environment: Environment,
  method: string,
  urlPath: string,
  body?: unknown,
): Promise<Reply> => {
  const res = await fetch(`${service.base}${urlPath}`, {
    method,
    headers: {
      Authorization: `Bearer ${KEYS[environment]}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

/** Every collection each projection group writes (read.db: core; analytics.db: analytics). */
const CORE_COLLECTIONS = collectionsOf(CORE_GROUP.projections);
const ANALYTICS_COLLECTIONS = collectionsOf(ANALYTICS_GROUP.projections);

type Docs = Array<{ id: string; [key: string]: unknown }>;
interface GroupSnapshot {
  collections: Record<string, Docs>;
  checkpoint: number;
}
type Snapshot = Record<Environment, { core: GroupSnapshot; analytics: GroupSnapshot }>;

const snapshotGroup = async (file: string, collections: string[], checkpoint: string): Promise<GroupSnapshot> => {
  const reads = SqliteReadStore.open(file);
  try {
    const out: GroupSnapshot = { collections: {}, checkpoint: await reads.getCheckpoint(checkpoint) };
    for (const collection of collections)
      out.collections[collection] = await reads.find(collection, {}, { sort: [['id', 1]] });
    return out;
  } finally {
    await reads.close();
  }
};

/** Every document of every read model of both groups, and both checkpoints, read straight from the files. */
const snapshotReadModels = async (dataDir: string): Promise<Snapshot> => {
  const out = {} as Snapshot;
  for (const environment of ENVIRONMENTS) {
    const files = environmentFiles(dataDir, environment);
    out[environment] = {
      core: await snapshotGroup(files.reads, CORE_COLLECTIONS, CORE_CHECKPOINT),
      analytics: await snapshotGroup(files.analytics, ANALYTICS_COLLECTIONS, ANALYTICS_CHECKPOINT),
    };
  }
  return out;
};

interface Ack {
  voucher: number;
  orderId: string;
  applicationId: string;
}

for (const applyMode of APPLY_MODES)
  describe(`durability (real process, SIGKILL, replay; apply: ${applyMode})`, function () {
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
      const service = await startService(dataDir, applyMode);

      for (const v of VOUCHERS) {
        const res = await call(service, v.environment, 'POST', '/v1/vouchers', percentageVoucher(v.code));
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        voucherIds.push(res.body.id);
      }

      const replies = await Promise.all(
        Array.from({ length: ORDERS }, async (_, i) => {
          const voucher = i % VOUCHERS.length;
          const orderId = `order-${String(i).padStart(3, '0')}`;
          const res = await call(service, VOUCHERS[voucher]!.environment, 'POST', '/v1/vouchers/apply', {
            code: VOUCHERS[voucher]!.code,
            order_id: orderId,
            order: { value: 10_000 + i * 100, currency: 'USD' },
            customer: { id: `customer-${i % 7}`, segment: i % 2 === 0 ? 'vip' : 'regular' },
          }).catch((error: unknown) => ({ status: 0, body: String(error) }));
          return { voucher, orderId, res };
        }),
      );
      for (const { voucher, orderId, res } of replies) {
        if (res.status >= 200 && res.status < 300) acks.push({ voucher, orderId, applicationId: res.body.id });
        else failures.push({ orderId, status: res.status, body: res.body });
      }
      // The checks below need applications on every voucher (one to roll back, one on the deactivated one).
      for (let v = 0; v < VOUCHERS.length; v += 1) {
        expect(
          acks.filter((a) => a.voucher === v),
          `acknowledged on voucher ${v}; failures ${JSON.stringify(failures)}`,
        ).to.have.length.above(1);
      }

      rolledBack = acks.find((a) => a.voucher === 0)!;
      const rollback = await call(
        service,
        'sandbox',
        'POST',
        `/v1/vouchers/applications/${rolledBack.applicationId}/rollback`,
        rollbackBody(),
      );
      expect(rollback.status, JSON.stringify(rollback.body)).to.equal(200);
      const deactivate = await call(
        service,
        VOUCHERS[deactivated]!.environment,
        'DELETE',
        `/v1/vouchers/${voucherIds[deactivated]}`,
      );
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
      restarted = await startService(dataDir, applyMode);
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
        expect(
          history.map((h) => h.order_id),
          code,
        ).to.have.members(mine.map((a) => a.orderId));
        expect(
          history.map((h) => h.id),
          code,
        ).to.have.members(mine.map((a) => a.applicationId));
        for (const h of history)
          expect(h.status, `${code} ${h.order_id}`).to.equal(
            h.id === rolledBack.applicationId ? 'rolled_back' : 'applied',
          );

        const listed = await call(
          restarted,
          environment,
          'GET',
          `/v1/vouchers/${voucherIds[v]}/applications?limit=100`,
        );
        expect(listed.status).to.equal(200);
        expect(listed.body.total, code).to.equal(mine.length);
      }
      // The other environment does not see them: each environment has its own files.
      const crossed = await call(restarted, 'production', 'GET', `/v1/vouchers/${voucherIds[0]}`);
      expect(crossed.status).to.equal(404);
    });

    it('every application on the log has its order record (atomic: committed with it, in the same append), and nothing pending', async () => {
      for (const environment of ENVIRONMENTS) {
        const events = SqliteEventStore.open(environmentFiles(dataDir, environment).events);
        try {
          const all = await events.readAll();
          const byPosition = new Map(all.map((e) => [e.position, e]));
          const applied = all.filter((e) => e.type === 'VoucherApplied');
          expect(applied.length, environment).to.be.above(0);
          const confirmations = all.filter((e) => e.type === 'OrderVoucherConfirmed');
          for (const a of applied) {
            const data = a.data as { applicationId: string; orderId: string; discountAmount: number };
            const record = confirmations.find(
              (c) => (c.data as { applicationId: string }).applicationId === data.applicationId,
            );
            if (applyMode === 'atomic' && record) {
              // Committed with it: a batch of applies to one voucher writes its VoucherApplied events,
              // then their order records, in one append; nothing else lies between the two.
              for (let p = a.position + 1; p < record.position; p += 1) {
                const between = byPosition.get(p);
                if (between === undefined) continue;
                expect(
                  between.streamId === a.streamId || between.type === 'OrderVoucherConfirmed',
                  `${between.type} on ${between.streamId} between an application and its order record`,
                ).to.equal(true);
              }
            }
            expect(record?.streamId, data.orderId).to.equal(`order-${data.orderId}`);
            expect(record?.type).to.equal('OrderVoucherConfirmed');
            expect(record?.data).to.include({ applicationId: data.applicationId, discountAmount: data.discountAmount });
            expect(record!.position).to.be.above(a.position);
          }
          expect(confirmations).to.have.length(applied.length);
          // Two-append: every application was reserved first, and every reservation was confirmed or
          // released before its answer; atomic: none was written.
          const idOf = (e: { data: unknown }) => (e.data as { applicationId: string }).applicationId;
          const reserved = new Set(all.filter((e) => e.type === 'OrderVoucherReserved').map(idOf));
          const settled = new Set(
            all.filter((e) => e.type === 'OrderVoucherConfirmed' || e.type === 'OrderVoucherDetached').map(idOf),
          );
          expect(
            [...reserved].filter((id) => !settled.has(id)),
            `${environment} unsettled`,
          ).to.deep.equal([]);
          if (applyMode === 'atomic') expect(reserved.size, environment).to.equal(0);
          else expect([...reserved], environment).to.include.members(applied.map(idOf));
        } finally {
          await events.close();
        }
      }
    });

    it('rebuilds every read model of both groups, and both checkpoints, identical to the live ones with npm run replay', async () => {
      expect(restarted, 'the restarted service from the previous test').to.not.equal(undefined);
      // Order attempts (validations) for the analytics group: buffered, and written at the graceful stop below.
      for (let v = 0; v < deactivated; v += 1) {
        const { environment, code } = VOUCHERS[v]!;
        const validated = await call(restarted!, environment, 'POST', '/v1/vouchers/validate', {
          code,
          order: { id: `attempt-${v}`, value: 5_000 },
        });
        expect(validated.status, JSON.stringify(validated.body)).to.equal(200);
      }
      restarted!.proc.child.kill('SIGTERM');
      const stopped = await exitWithin(restarted!.proc, 15_000);
      expect(stopped.code, restarted!.proc.output()).to.equal(0);

      expect(CORE_COLLECTIONS).to.have.members(['vouchers', 'voucher_usage', 'applications', 'webhook_endpoints']);
      expect(ANALYTICS_COLLECTIONS).to.have.members([
        'analytics_daily',
        'analytics_voucher_customers',
        'analytics_customers',
        'analytics_order_attempts',
        'analytics_applications',
        'analytics_orders',
        'exports',
      ]);
      const before = await snapshotReadModels(dataDir);
      const { sandbox, production } = before;
      expect(sandbox.core.collections.vouchers).to.have.length(3);
      expect(production.core.collections.vouchers).to.have.length(2);
      expect(sandbox.core.collections.applications.length + production.core.collections.applications.length).to.equal(
        acks.length,
      );
      // Every voucher has applications, so every voucher has its usage document.
      expect(sandbox.core.collections.voucher_usage).to.have.length(3);
      expect(production.core.collections.voucher_usage).to.have.length(2);
      for (const environment of ENVIRONMENTS) {
        const { core, analytics } = before[environment];
        expect(core.checkpoint, environment).to.be.above(0);
        expect(analytics.checkpoint, environment).to.equal(core.checkpoint);
        for (const collection of ANALYTICS_COLLECTIONS.filter(
          (c) => c !== 'exports' && c !== 'analytics_applications',
        )) {
          // the test makes no export, and no build since orders list their applications writes analytics_applications
          expect(analytics.collections[collection], `${environment} ${collection}`).to.not.be.empty;
        }
        expect(analytics.collections.analytics_applications, environment).to.deep.equal([]);
      }

      // Damage the read models of both groups so that a replay that skipped any of them could not pass.
      const sandboxReads = SqliteReadStore.open(environmentFiles(dataDir, 'sandbox').reads);
      const productionReads = SqliteReadStore.open(environmentFiles(dataDir, 'production').reads);
      try {
        await sandboxReads.writeBatch({
          upserts: [
            { collection: 'vouchers', doc: { id: 'v_Ghost', code: 'GHOST', usage_count: 1 } },
            { collection: 'vouchers', doc: { ...sandbox.core.collections.vouchers[0]!, usage_count: 999 } },
            { collection: 'voucher_usage', doc: { ...sandbox.core.collections.voucher_usage[0]!, usage_count: 999 } },
          ],
          checkpoint: { name: CORE_CHECKPOINT, position: 1 },
        });
        await productionReads.writeBatch({
          upserts: [{ collection: 'voucher_usage', doc: { id: 'v_Ghost', usage_count: 7 } }],
          deletes: [
            { collection: 'applications', id: production.core.collections.applications[0]!.id },
            { collection: 'voucher_usage', id: production.core.collections.voucher_usage[0]!.id },
          ],
          checkpoint: { name: CORE_CHECKPOINT, position: 2 },
        });
      } finally {
        await sandboxReads.close();
        await productionReads.close();
      }
      // And the analytics read models, in their own file: the daily documents gone, the others altered.
      for (const environment of ENVIRONMENTS) {
        const live = before[environment].analytics.collections;
        const analytics = SqliteReadStore.open(environmentFiles(dataDir, environment).analytics);
        try {
          await analytics.reset(['analytics_daily'], ANALYTICS_CHECKPOINT);
          await analytics.writeBatch({
            upserts: [
              { collection: 'analytics_customers', doc: { ...live.analytics_customers![0]!, uses: 999 } },
              {
                collection: 'analytics_voucher_customers',
                doc: { ...live.analytics_voucher_customers![0]!, uses: 999 },
              },
              {
                collection: 'analytics_applications',
                doc: {
                  id: 'va_Ghost',
                  voucher_id: 'v_Ghost',
                  customer_id: null,
                  day: '2026-01-01',
                  segment: 'unknown',
                  rolled_back: false,
                },
              },
              { collection: 'exports', doc: { id: 'exp_Ghost', status: 'completed' } },
              { collection: 'analytics_orders', doc: { id: 'o_Ghost', order_value: 1, live: [] } },
            ],
            deletes: [{ collection: 'analytics_order_attempts', id: live.analytics_order_attempts![0]!.id }],
            checkpoint: { name: ANALYTICS_CHECKPOINT, position: 1 },
          });
        } finally {
          await analytics.close();
        }
      }
      const damaged = await snapshotReadModels(dataDir);
      for (const environment of ENVIRONMENTS) {
        for (const group of ['core', 'analytics'] as const) {
          expect(damaged[environment][group].checkpoint, `${environment} ${group} checkpoint`).to.not.equal(
            before[environment][group].checkpoint,
          );
        }
        for (const collection of ['voucher_usage', ...ANALYTICS_COLLECTIONS]) {
          const group = collection === 'voucher_usage' ? 'core' : 'analytics';
          expect(
            damaged[environment][group].collections[collection],
            `${environment} ${collection} damaged`,
          ).to.not.deep.equal(before[environment][group].collections[collection]);
        }
      }

      const logSizes = {} as Record<Environment, number>;
      for (const environment of ENVIRONMENTS) {
        const events = SqliteEventStore.open(environmentFiles(dataDir, environment).events);
        try {
          logSizes[environment] = (await events.readAll()).length;
        } finally {
          await events.close();
        }
      }

      const replay = run(['scripts/replay.ts'], { DATA_DIR: dataDir });
      const result = await exitWithin(replay, 60_000);
      expect(result.code, replay.output()).to.equal(0);
      // Not a terminal: one plain line per environment instead of a progress bar.
      expect(replay.output()).to.include(`sandbox: replayed ${logSizes.sandbox} events`);
      expect(replay.output()).to.include(`production: replayed ${logSizes.production} events`);
      // No service holds DATA_DIR (it was stopped above): nothing to warn about.
      expect(replay.output()).not.to.match(/warning|refused/);

      const after = await snapshotReadModels(dataDir);
      for (const environment of ENVIRONMENTS) {
        for (const group of ['core', 'analytics'] as const) {
          for (const collection of Object.keys(before[environment][group].collections)) {
            expect(after[environment][group].collections[collection], `${environment} ${collection}`).to.deep.equal(
              before[environment][group].collections[collection],
            );
          }
          expect(after[environment][group].checkpoint, `${environment} ${group} checkpoint`).to.equal(
            before[environment][group].checkpoint,
          );
        }
      }
      expect(after).to.deep.equal(before);
      // And the rebuilt figures agree with the applications: usage counts, and the daily documents count every live use.
      for (const environment of ENVIRONMENTS) {
        const { core, analytics } = after[environment];
        const live = core.collections.applications!.filter((a) => a.status === 'applied');
        for (const usage of core.collections.voucher_usage!) {
          expect(usage.usage_count, `${environment} ${usage.id}`).to.equal(
            live.filter((a) => a.voucher_id === usage.id).length,
          );
        }
        expect(
          analytics.collections.analytics_daily!.reduce((n, d) => n + (d.uses as number), 0),
          environment,
        ).to.equal(live.length);
      }
    });
  });
