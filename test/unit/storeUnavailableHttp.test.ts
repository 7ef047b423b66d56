/**
 * errors.ts: a store server that cannot be reached (StoreUnavailableError from an adapter)
 * answers 503 SERVICE_UNAVAILABLE in the spec's error shape, with Retry-After, and no detail of
 * the store or its address.
 */
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import { errorHandler, STORE_RETRY_AFTER_SECONDS } from '../../src/http/errors.ts';

describe('StoreUnavailableError over HTTP', function () {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After and the error shape', async function () {
    const app = express();
    app.post('/write', () => {
      throw new StoreUnavailableError('eventstore', new Error('connect ECONNREFUSED 10.0.0.7:2113'));
    });
    app.use(errorHandler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/write`, { method: 'POST' });
      expect(response.status).to.equal(503);
      expect(response.headers.get('retry-after')).to.equal(String(STORE_RETRY_AFTER_SECONDS));
      const text = await response.text();
      expect(JSON.parse(text)).to.deep.equal({
        error: {
          code: 'SERVICE_UNAVAILABLE',
          message: 'The service cannot reach its storage; retry after Retry-After seconds',
          details: {},
        },
      });
      expect(text).to.not.include('10.0.0.7');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
