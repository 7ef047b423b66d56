/** The HTTP server's limits read from the environment (src/config.ts serverLimitsFrom). */
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { DEFAULT_SERVER_LIMITS } from '../../src/http/server.ts';

describe('loadConfig: HTTP server limits', () => {
  it('defaults to DEFAULT_SERVER_LIMITS', () => {
    expect(loadConfig({}).server).to.deep.equal(DEFAULT_SERVER_LIMITS);
  });

  it('reads HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, HTTP_IDLE_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_MAX_CONNECTIONS', () => {
    expect(
      loadConfig({
        HTTP_HEADERS_TIMEOUT_MS: '5000',
        HTTP_REQUEST_TIMEOUT_MS: '20000',
        HTTP_IDLE_TIMEOUT_MS: '15000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '75000',
        HTTP_MAX_CONNECTIONS: '200',
      }).server,
    ).to.deep.equal({
      headersTimeoutMs: 5000,
      requestTimeoutMs: 20_000,
      idleTimeoutMs: 15_000,
      keepAliveTimeoutMs: 75_000,
      maxConnections: 200,
    });
  });

  it('refuses zero, negatives, fractions and words, naming the variable', () => {
    expect(() => loadConfig({ HTTP_MAX_CONNECTIONS: '0' })).to.throw(/HTTP_MAX_CONNECTIONS must be an integer from 1/);
    expect(() => loadConfig({ HTTP_IDLE_TIMEOUT_MS: '-5' })).to.throw(/HTTP_IDLE_TIMEOUT_MS/);
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '1.5' })).to.throw(/HTTP_KEEP_ALIVE_TIMEOUT_MS/);
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: 'soon' })).to.throw(/HTTP_REQUEST_TIMEOUT_MS/);
    expect(() => loadConfig({ HTTP_IDLE_TIMEOUT_MS: '3000000000' })).to.throw(/HTTP_IDLE_TIMEOUT_MS/);
  });

  it('refuses a headers timeout longer than the request timeout (Node would throw at start)', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' })).to.throw(
      'HTTP_HEADERS_TIMEOUT_MS (40000) must not exceed HTTP_REQUEST_TIMEOUT_MS (30000)',
    );
  });
});
