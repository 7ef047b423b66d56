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
