/**
 * The operator's endpoints: GET /healthz, GET /readyz (stores reachable, core projector caught up;
 * failures injected with sinon) and GET /metrics (Prometheus text: request latency by route
 * pattern, append latency, projector lag, webhook queues; METRICS_TOKEN).
 */
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import sinon from 'sinon';
import { openEmbedded, webhookQueues, type Embedded } from '../../src/composition.ts';
import { ENDPOINTS } from '../../src/application/webhooks/deliveryStore.ts';
import { loadConfig } from '../../src/config.ts';
import { createApp } from '../../src/http/createApp.ts';
import { ServiceMetrics, type MetricsSources } from '../../src/http/metrics.ts';
import { DEFAULT_OPS_SETTINGS, type OpsSettings } from '../../src/http/ops.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { fixedVoucher } from '../fixtures/vouchers.ts';
import { FakeClock } from '../support/fakeClock.ts';

const KEY = 'sk_test_OpsEndpointsKeyForTests000000001';
const TOKEN = 'metrics-token-for-tests-0123456789';

interface Running {
  baseUrl: string;
  embedded: Embedded;
  metrics?: ServiceMetrics;
  stop(): Promise<void>;
}

const start = async (
  options: {
    metrics?: boolean;
    ops?: Partial<OpsSettings>;
    stopping?: () => boolean;
    webhookQueues?: MetricsSources['webhookQueues'];
  } = {},
): Promise<Running> => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-ops-'));
  const logger = pino({ level: 'silent' });
  const metrics = options.metrics === false ? undefined : new ServiceMetrics();
  const embedded = await openEmbedded({
    dataDir,
    clock: new FakeClock(),
    logger,
    apiKeys: [KEY],
    projectors: 'inline',
    onAppend: metrics ? (environment, seconds) => metrics.appended(environment, seconds) : undefined,
  });
  metrics?.observe({ environments: embedded.environments, webhookQueues: options.webhookQueues });
  const app = createApp({
    environments: embedded.environments,
    keys: embedded.keys,
    logger,
    metrics,
    ops: { ...DEFAULT_OPS_SETTINGS, ...options.ops },
    stopping: options.stopping,
  });
  const server = await new Promise<Server>((resolve) => {
    const s = createHttpServer(app).listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    embedded,
    metrics,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await embedded.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

const get = async (base: string, urlPath: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${base}${urlPath}`, { headers });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* Prometheus text */
  }
  return { status: res.status, headers: res.headers, body };
};

const post = (base: string, urlPath: string, body: unknown) =>
  fetch(`${base}${urlPath}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));

/** The value of one sample (`name{labels} value`) of a Prometheus text, or undefined. */
const sample = (text: string, name: string, labels: Record<string, string>): number | undefined => {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
};

/** Every value the label takes in the metric's samples. */
const labelValues = (text: string, name: string, label: string): Set<string> =>
  new Set([...text.matchAll(new RegExp(`^${name}\\{[^}]*\\b${label}="([^"]*)"`, 'gm'))].map((m) => m[1]!));

describe('GET /healthz and GET /readyz', () => {
  let service: Running;
  before(async () => {
    service = await start({ ops: { readyMaxProjectorLag: 100, readyCheckTimeoutMs: 200 } });
  });
  after(async () => {
    await service.stop();
  });
  afterEach(() => sinon.restore());

  it('/healthz answers 200 {"status":"ok"} without a key; /health still does too', async () => {
    for (const p of ['/healthz', '/health']) {
      const res = await get(service.baseUrl, p);
      expect([p, res.status, res.body]).to.deep.equal([p, 200, { status: 'ok' }]);
    }
  });

  it('/readyz answers 200 {"status":"ready"} when every store answers and the core projector is caught up', async () => {
    expect(await post(service.baseUrl, '/v1/vouchers', fixedVoucher('READY1'))).to.have.property('status', 201);
    const res = await get(service.baseUrl, '/readyz');
    expect([res.status, res.body]).to.deep.equal([200, { status: 'ready' }]);
    expect(res.headers.get('cache-control')).to.equal('no-store');
  });

  it('/readyz answers 503 naming each store that fails, without the error itself', async () => {
    const { sandbox, production } = service.embedded.environments;
    sinon.stub(sandbox.events, 'headPosition').rejects(new Error('SQLITE_IOERR: disk I/O error at /secret/path'));
    sinon.stub(production.kv, 'get').rejects(new Error('boom'));
    const res = await get(service.baseUrl, '/readyz');
    expect(res.status).to.equal(503);
    expect(res.body).to.deep.equal({
      status: 'not_ready',
      failures: [
        { check: 'production.kv', reason: 'unreachable' },
        { check: 'sandbox.events', reason: 'unreachable' },
      ],
    });
  });

  it('/readyz answers 503 when a store does not answer within the check timeout', async () => {
    sinon.stub(service.embedded.environments.sandbox.reads, 'getCheckpoint').returns(new Promise(() => {}));
    const res = await get(service.baseUrl, '/readyz');
    expect([res.status, res.body.failures]).to.deep.equal([503, [{ check: 'sandbox.reads', reason: 'timed out' }]]);
  });

  it('/readyz answers 503 when the core projector lags more than READY_MAX_PROJECTOR_LAG behind the head, 200 at the bound', async () => {
    const { sandbox } = service.embedded.environments;
    const head = sinon.stub(sandbox.events, 'headPosition').resolves(sandbox.projector.checkpoint + 101);
    const lagging = await get(service.baseUrl, '/readyz');
    expect([lagging.status, lagging.body.failures]).to.deep.equal([
      503,
      [{ check: 'sandbox.projector.core', reason: 'lag 101 > 100 positions' }],
    ]);
    head.resolves(sandbox.projector.checkpoint + 100);
    expect((await get(service.baseUrl, '/readyz')).status).to.equal(200);
  });
});

describe('GET /readyz while shutting down', () => {
  it('answers 503 "shutting down" once the service stops, while /healthz still answers 200', async () => {
    let stopping = false;
    const service = await start({ stopping: () => stopping, metrics: false });
    try {
      expect((await get(service.baseUrl, '/readyz')).status).to.equal(200);
      stopping = true;
      const res = await get(service.baseUrl, '/readyz');
      expect([res.status, res.body.failures]).to.deep.equal([503, [{ check: 'service', reason: 'shutting down' }]]);
      expect((await get(service.baseUrl, '/healthz')).status).to.equal(200);
      expect((await get(service.baseUrl, '/metrics')).status, 'METRICS=off: no /metrics').to.equal(404);
    } finally {
      await service.stop();
    }
  });
});

describe('GET /metrics', () => {
  let service: Running;
  let queueCounts = 0;
  before(async () => {
    service = await start({
      webhookQueues: async (environment) => {
        queueCounts += 1;
        return environment === 'sandbox' ? [{ endpointId: 'we_test1', pending: 3, failed: 2 }] : [];
      },
    });
  });
  after(async () => {
    await service.stop();
  });
  afterEach(() => sinon.restore());

  it('answers Prometheus text with every metric of the service named', async () => {
    const res = await get(service.baseUrl, '/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
    for (const name of [
      'http_request_duration_seconds',
      'event_store_append_duration_seconds',
      'projector_lag',
      'webhook_deliveries_pending',
      'webhook_deliveries_failed',
    ])
      expect(res.body, name).to.include(`# TYPE ${name} `);
  });

  it('counts requests by route pattern, method and status, and appends by environment, as they happen', async () => {
    const before = (await get(service.baseUrl, '/metrics')).body as string;
    const created = await post(service.baseUrl, '/v1/vouchers', fixedVoucher('METRICS1'));
    expect(created.status).to.equal(201);
    const read = await get(service.baseUrl, `/v1/vouchers/${created.body.id}`, { Authorization: `Bearer ${KEY}` });
    expect(read.status).to.equal(200);
    // answered by the error handler, after the error left the router
    const missing = await get(service.baseUrl, '/v1/vouchers/vch_NoSuchVoucher', { Authorization: `Bearer ${KEY}` });
    expect(missing.status).to.equal(404);
    const after = (await get(service.baseUrl, '/metrics')).body as string;
    const count = (text: string, labels: Record<string, string>) =>
      sample(text, 'http_request_duration_seconds_count', labels) ?? 0;
    const create = { method: 'POST', route: '/v1/vouchers', status: '201' };
    expect(count(after, create) - count(before, create)).to.equal(1);
    const found = { method: 'GET', route: '/v1/vouchers/:voucherId', status: '200' };
    expect(count(after, found) - count(before, found)).to.equal(1);
    const notFound = { method: 'GET', route: '/v1/vouchers/:voucherId', status: '404' };
    expect(count(after, notFound) - count(before, notFound)).to.equal(1);
    const appends = (text: string) =>
      sample(text, 'event_store_append_duration_seconds_count', { environment: 'sandbox' }) ?? 0;
    expect(appends(after) - appends(before)).to.be.at.least(1);
    expect(sample(after, 'event_store_append_duration_seconds_sum', { environment: 'sandbox' })).to.be.above(0);
  });

  it('times each append once, whichever append method is called', async () => {
    const { sandbox } = service.embedded.environments;
    const appends = async () =>
      sample((await get(service.baseUrl, '/metrics')).body, 'event_store_append_duration_seconds_count', {
        environment: 'sandbox',
      }) ?? 0;
    const before = await appends();
    await sandbox.events.appendToStream('ops-test-1', [{ type: 'OpsTestEvent', data: {} } as never]);
    expect((await appends()) - before).to.equal(1);
    await sandbox.events.appendToStreams([
      { streamId: 'ops-test-2', events: [{ type: 'OpsTestEvent', data: {} } as never] },
      { streamId: 'ops-test-3', events: [{ type: 'OpsTestEvent', data: {} } as never] },
    ]);
    expect((await appends()) - before).to.equal(2);
  });

  it('gives every path no route matched one label value, "unmatched": unknown paths add no label values', async () => {
    await get(service.baseUrl, '/no/such/path-1');
    const before = (await get(service.baseUrl, '/metrics')).body as string;
    for (const p of ['/no/such/path-2', '/v1/no-such-endpoint-3', '/x%zz', '/healthz/extra'])
      expect((await get(service.baseUrl, p)).status, p).to.equal(404);
    const after = (await get(service.baseUrl, '/metrics')).body as string;
    const routes = labelValues(after, 'http_request_duration_seconds_count', 'route');
    expect([...routes].filter((r) => !r.startsWith('/'))).to.deep.equal(['unmatched']);
    for (const route of routes) expect(route, 'a raw path as a label').to.not.match(/no-such|no\/such|zz|extra/);
    expect(routes).to.deep.equal(labelValues(before, 'http_request_duration_seconds_count', 'route'));
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    expect(
      (sample(after, 'http_request_duration_seconds_count', unmatched) ?? 0) -
        (sample(before, 'http_request_duration_seconds_count', unmatched) ?? 0),
    ).to.equal(4);
  });

  it('reports each projection group’s lag (head − checkpoint) per environment', async () => {
    const { sandbox } = service.embedded.environments;
    let text = (await get(service.baseUrl, '/metrics')).body as string;
    for (const environment of ['sandbox', 'production'])
      for (const group of ['core', 'analytics', 'webhooks'])
        expect(sample(text, 'projector_lag', { environment, group }), `${environment} ${group}`).to.be.a('number');
    sinon.stub(sandbox.events, 'headPosition').resolves(sandbox.projector.checkpoint + 7);
    text = (await get(service.baseUrl, '/metrics')).body as string;
    expect(sample(text, 'projector_lag', { environment: 'sandbox', group: 'core' })).to.equal(7);
  });

  it('still answers when a source fails, leaving out only that environment’s samples', async () => {
    const { sandbox } = service.embedded.environments;
    sinon.stub(sandbox.events, 'headPosition').rejects(new Error('disk I/O error'));
    const res = await get(service.baseUrl, '/metrics');
    expect(res.status).to.equal(200);
    expect(sample(res.body, 'projector_lag', { environment: 'sandbox', group: 'core' })).to.equal(undefined);
    expect(sample(res.body, 'projector_lag', { environment: 'production', group: 'core' })).to.be.a('number');
  });

  it('reports pending and failed webhook deliveries per endpoint from the source it is given', async () => {
    const counted = queueCounts;
    const text = (await get(service.baseUrl, '/metrics')).body as string;
    expect(queueCounts - counted, 'each environment counted once per scrape').to.equal(2);
    expect(sample(text, 'webhook_deliveries_pending', { environment: 'sandbox', endpoint: 'we_test1' })).to.equal(3);
    expect(sample(text, 'webhook_deliveries_failed', { environment: 'sandbox', endpoint: 'we_test1' })).to.equal(2);
  });
});

describe('webhookQueues (composition): the source GET /metrics reads in the service', () => {
  it('counts in each environment’s own deliveries store', async () => {
    const service = await start({ metrics: false });
    try {
      const queues = webhookQueues(service.embedded.environments);
      expect(await queues('sandbox')).to.deep.equal([]);
      await service.embedded.environments.sandbox.webhooks.deliveries!.write({
        upserts: [{ collection: ENDPOINTS, doc: { id: 'we_only_sandbox', deleted: false } }],
      });
      expect(await queues('sandbox')).to.deep.equal([{ endpointId: 'we_only_sandbox', pending: 0, failed: 0 }]);
      expect(await queues('production')).to.deep.equal([]);
    } finally {
      await service.stop();
    }
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let service: Running;
  before(async () => {
    service = await start({ ops: { metricsToken: TOKEN } });
  });
  after(async () => {
    await service.stop();
  });

  it('needs Authorization: Bearer <METRICS_TOKEN>; /healthz and /readyz stay open', async () => {
    const none = await get(service.baseUrl, '/metrics');
    expect([none.status, none.body.error.code]).to.deep.equal([401, 'MISSING_API_KEY']);
    expect(none.headers.get('www-authenticate')).to.equal('Bearer realm="metrics"');
    const wrong = await get(service.baseUrl, '/metrics', { Authorization: `Bearer ${TOKEN}x` });
    expect([wrong.status, wrong.body.error.code]).to.deep.equal([401, 'INVALID_API_KEY']);
    const apiKey = await get(service.baseUrl, '/metrics', { Authorization: `Bearer ${KEY}` });
    expect(apiKey.status, 'an API key is not the metrics token').to.equal(401);
    const right = await get(service.baseUrl, '/metrics', { Authorization: `Bearer ${TOKEN}` });
    expect(right.status).to.equal(200);
    expect(right.body).to.include('# TYPE http_request_duration_seconds histogram');
    expect((await get(service.baseUrl, '/healthz')).status).to.equal(200);
    expect((await get(service.baseUrl, '/readyz')).status).to.equal(200);
  });
});

describe('configuration of the operator endpoints', () => {
  it('reads METRICS, METRICS_TOKEN and READY_MAX_PROJECTOR_LAG, with defaults', () => {
    const defaults = loadConfig({});
    expect([defaults.metrics, defaults.ops]).to.deep.equal([true, DEFAULT_OPS_SETTINGS]);
    const set = loadConfig({ METRICS: 'off', METRICS_TOKEN: TOKEN, READY_MAX_PROJECTOR_LAG: '50' });
    expect([set.metrics, set.ops.metricsToken, set.ops.readyMaxProjectorLag]).to.deep.equal([false, TOKEN, 50]);
  });

  it('refuses what it does not understand at start, naming the variable and never showing the token', () => {
    expect(() => loadConfig({ METRICS: 'yes' })).to.throw('METRICS must be "on" or "off", got "yes"');
    expect(() => loadConfig({ READY_MAX_PROJECTOR_LAG: '-1' })).to.throw(/READY_MAX_PROJECTOR_LAG/);
    for (const token of ['short', 'has spaces in it 0123456789']) {
      let message = '';
      try {
        loadConfig({ METRICS_TOKEN: token });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.match(/^METRICS_TOKEN must be/);
      expect(message).to.not.include(token);
    }
  });
});
