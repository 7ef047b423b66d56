import { expect } from 'chai';
import path from 'node:path';
import { loadConfig } from '../../src/config.ts';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({
      port: 3000,
      host: '0.0.0.0',
      logLevel: 'info',
      readYourWritesMs: 5000,
      expiryIntervalMs: 30_000,
    });
    expect(config.dataDir).to.equal(path.resolve('./data'));
    expect(config.apiKeys).to.deep.equal([]);
  });

  it('reads the environment, splitting and trimming VOUCHER_API_KEYS', () => {
    const config = loadConfig({
      PORT: '4010',
      DATA_DIR: '/tmp/x',
      LOG_LEVEL: 'warn',
      VOUCHER_API_KEYS: ' sk_test_a , sk_live_b,, ',
    });
    expect(config).to.deep.include({ port: 4010, dataDir: '/tmp/x', logLevel: 'warn' });
    expect(config.apiKeys).to.deep.equal(['sk_test_a', 'sk_live_b']);
  });

  it('caps the expiry interval at one minute (expiry is recorded within a minute)', () => {
    expect(loadConfig({ EXPIRY_INTERVAL_MS: '600000' }).expiryIntervalMs).to.equal(60_000);
    expect(loadConfig({ EXPIRY_INTERVAL_MS: '5000' }).expiryIntervalMs).to.equal(5_000);
  });

  it('refuses a malformed number, naming the variable', () => {
    expect(() => loadConfig({ PORT: 'abc' })).to.throw(/PORT/);
    expect(() => loadConfig({ READ_YOUR_WRITES_MS: '-1' })).to.throw(/READ_YOUR_WRITES_MS/);
  });

  it('runs the analytics projectors on a thread unless PROJECTORS=inline; refuses anything else', () => {
    expect(loadConfig({}).projectors).to.equal('thread');
    expect(loadConfig({ PROJECTORS: 'inline' }).projectors).to.equal('inline');
    expect(() => loadConfig({ PROJECTORS: 'both' })).to.throw(/PROJECTORS/);
  });

  it('commits the event stores on a writer thread unless EVENT_STORE_WRITER=inline; refuses anything else', () => {
    expect(loadConfig({}).eventStoreWriter).to.equal('thread');
    expect(loadConfig({ EVENT_STORE_WRITER: 'inline' }).eventStoreWriter).to.equal('inline');
    expect(() => loadConfig({ EVENT_STORE_WRITER: 'main' })).to.throw(
      /EVENT_STORE_WRITER must be "thread" or "inline"/,
    );
  });

  it('writes the SQLite snapshots on their writer thread unless SNAPSHOT_WRITER=inline; refuses anything else', () => {
    expect(loadConfig({}).snapshotWriter).to.equal('thread');
    expect(loadConfig({ SNAPSHOT_WRITER: 'inline' }).snapshotWriter).to.equal('inline');
    expect(() => loadConfig({ SNAPSHOT_WRITER: 'main' })).to.throw(/SNAPSHOT_WRITER must be "thread" or "inline"/);
  });

  it('APPLY_MODE: unset leaves the choice to the event store; atomic or two-append; refuses anything else', () => {
    expect(loadConfig({}).applyMode).to.equal(undefined);
    expect(loadConfig({ APPLY_MODE: 'two-append' }).applyMode).to.equal('two-append');
    expect(loadConfig({ APPLY_MODE: 'atomic' }).applyMode).to.equal('atomic');
    expect(() => loadConfig({ APPLY_MODE: 'twoappend' })).to.throw(/APPLY_MODE must be "atomic" or "two-append"/);
  });

  it('runs webhook delivery on a thread unless WEBHOOK_DELIVERY=inline; refuses anything else', () => {
    expect(loadConfig({}).webhookDelivery).to.equal('thread');
    expect(loadConfig({ WEBHOOK_DELIVERY: 'inline' }).webhookDelivery).to.equal('inline');
    expect(() => loadConfig({ WEBHOOK_DELIVERY: 'both' })).to.throw(/WEBHOOK_DELIVERY must be "thread" or "inline"/);
  });

  it('reads the per-key quotas, keeping the defaults for those unset; refuses anything but a positive integer, naming the variable', () => {
    expect(loadConfig({}).quotas).to.deep.equal({ outstandingQuotes: 1_000, pendingExports: 3, exportFiles: 10 });
    expect(
      loadConfig({ QUOTA_OUTSTANDING_QUOTES: '50', QUOTA_PENDING_EXPORTS: ' ', QUOTA_EXPORT_FILES: '2' }).quotas,
    ).to.deep.equal({ outstandingQuotes: 50, pendingExports: 3, exportFiles: 2 });
    for (const bad of ['0', '-1', '1.5', 'ten', '1e400']) {
      expect(() => loadConfig({ QUOTA_PENDING_EXPORTS: bad })).to.throw(
        new RegExp(`QUOTA_PENDING_EXPORTS must be a positive integer.*"${bad.replace('.', '\\.')}"`),
      );
    }
  });
});

describe('loadConfig: TRUST_PROXY and PUBLIC_BASE_URL', () => {
  it('TRUST_PROXY: off by default; a hop count; a list of addresses and subnets, as express reads them', () => {
    for (const off of [undefined, '', 'false', 'FALSE', '0', ' '])
      expect(loadConfig({ TRUST_PROXY: off }).trustProxy, String(off)).to.equal(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).to.equal(1);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).to.equal(2);
    expect(
      loadConfig({ TRUST_PROXY: ' 10.0.0.1, 10.0.0.0/8,loopback, fd00::/8, 192.168.0.0/255.255.0.0 ' }).trustProxy,
    ).to.deep.equal(['10.0.0.1', '10.0.0.0/8', 'loopback', 'fd00::/8', '192.168.0.0/255.255.0.0']);
  });

  it('TRUST_PROXY: refuses true (any client could pick its address) and what is not an address, naming it', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).to.throw(/TRUST_PROXY=true .* number of proxies/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.1,proxy.local' })).to.throw(/TRUST_PROXY .*"proxy\.local"/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).to.throw(/"10\.0\.0\.0\/33"/);
    expect(() => loadConfig({ TRUST_PROXY: '-1' })).to.throw(/TRUST_PROXY/);
  });

  it('PUBLIC_BASE_URL: unset by default; an http(s) root URL without trailing slash; refuses the rest', () => {
    expect(loadConfig({}).publicBaseUrl).to.equal(undefined);
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://vouchers.example.com/' }).publicBaseUrl).to.equal(
      'https://vouchers.example.com',
    );
    expect(loadConfig({ PUBLIC_BASE_URL: 'http://10.0.0.5:8080/promo/' }).publicBaseUrl).to.equal(
      'http://10.0.0.5:8080/promo',
    );
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'vouchers.example.com' })).to.throw(
      /PUBLIC_BASE_URL must be an absolute/,
    );
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'ftp://x.example' })).to.throw(/PUBLIC_BASE_URL must start with http/);
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'https://x.example/?a=1' })).to.throw(/query/);
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'https://x.example/v1' })).to.throw(/without \/v1/);
  });
});

describe('loadConfig: EVENTSTORE_URL', () => {
  it('is unset by default and kept as given (trimmed) when it is an EventStoreDB connection string', () => {
    expect(loadConfig({}).eventstoreUrl).to.equal(undefined);
    expect(loadConfig({ EVENTSTORE_URL: ' ' }).eventstoreUrl).to.equal(undefined);
    expect(loadConfig({ EVENTSTORE_URL: ' esdb://localhost:2113?tls=false ' }).eventstoreUrl).to.equal(
      'esdb://localhost:2113?tls=false',
    );
    for (const good of ['esdb://admin:changeit@a:2113,b:2113,c:2113?tls=true', 'esdb+discover://cluster.example.com']) {
      expect(loadConfig({ EVENTSTORE_URL: good }).eventstoreUrl).to.equal(good);
    }
  });

  it('refuses another scheme or a string without a host at start, without echoing the URL', () => {
    for (const bad of ['http://u:s3cret@db:2113', 'db:2113', 'esdb://', 'esdb://u:s3cret@', 'esdb://u:s3cret@db 1']) {
      expect(() => loadConfig({ EVENTSTORE_URL: bad }), bad)
        .to.throw(/^EVENTSTORE_URL/)
        .with.property('message')
        .that.does.not.include('s3cret');
    }
  });
});

describe('loadConfig: MONGODB_URL', () => {
  it('is unset by default and kept as given (trimmed) when it is a MongoDB connection string', () => {
    expect(loadConfig({}).mongodbUrl).to.equal(undefined);
    expect(loadConfig({ MONGODB_URL: ' ' }).mongodbUrl).to.equal(undefined);
    expect(loadConfig({ MONGODB_URL: ' mongodb://db:27017/shop?replicaSet=rs0 ' }).mongodbUrl).to.equal(
      'mongodb://db:27017/shop?replicaSet=rs0',
    );
    expect(loadConfig({ MONGODB_URL: 'mongodb+srv://cluster.example.com' }).mongodbUrl).to.equal(
      'mongodb+srv://cluster.example.com',
    );
  });

  it('refuses another scheme or an unusable database name at start, without echoing the URL', () => {
    for (const bad of ['postgres://u:s3cret@db/shop', 'db:27017', 'mongodb://', 'mongodb://u:s3cret@db/a.b']) {
      expect(() => loadConfig({ MONGODB_URL: bad }), bad)
        .to.throw(/^MONGODB_URL/)
        .with.property('message')
        .that.does.not.include('s3cret');
    }
  });
});

describe('loadConfig: HEAP_GROWING_PERCENT', () => {
  it('is 60 by default, 0 keeps V8 its own heuristic, and anything but a whole number up to 1000 stops the start naming it', () => {
    expect(loadConfig({}).heapGrowingPercent).to.equal(60);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).to.equal(0);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '30' }).heapGrowingPercent).to.equal(30);
    for (const raw of ['-1', '1.5', 'fast', '1001']) {
      expect(() => loadConfig({ HEAP_GROWING_PERCENT: raw }), raw).to.throw(/HEAP_GROWING_PERCENT/);
    }
  });
});

const gatherWindows = [
  { name: 'PROJECTOR_GATHER_MS', read: (c: ReturnType<typeof loadConfig>) => c.projectorGatherMs },
  { name: 'SNAPSHOT_GATHER_MS', read: (c: ReturnType<typeof loadConfig>) => c.snapshotGatherMs },
] as const;

for (const { name, read } of gatherWindows) {
  describe(`loadConfig: ${name}`, () => {
    it('is 25 ms by default, 0 turns it off, and anything but a whole number up to 1000 stops the start naming it', () => {
      expect(read(loadConfig({}))).to.equal(25);
      expect(read(loadConfig({ [name]: '0' }))).to.equal(0);
      expect(read(loadConfig({ [name]: '1000' }))).to.equal(1000);
      for (const raw of ['-1', '2.5', 'later', '1001']) {
        expect(() => loadConfig({ [name]: raw }), raw).to.throw(new RegExp(name));
      }
    });
  });
}
