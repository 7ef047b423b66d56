import { expect } from 'chai';
import { Router, type RequestHandler } from 'express';
import { pino } from 'pino';
import type { AppDeps } from '../../src/http/createApp.ts';
import { createApp } from '../../src/http/createApp.ts';
import type { Guard } from '../../src/http/auth.ts';
import { under } from '../../src/http/routes/mount.ts';
import { apiRoutes, servedRoutes } from '../support/apiRoutes.ts';

const routesOf = (stack: unknown[]): string[] => servedRoutes(stack).map((route) => `${route.method} ${route.path}`);

const pass: RequestHandler = (_req, _res, next) => next();

describe('API routes on the app itself', () => {
  it('under(target, prefix) registers each method at the prefixed path', () => {
    const router = Router();
    const v1 = under(router, '/v1');
    v1.get('/a', pass);
    v1.post('/a', pass);
    v1.put('/b/:id', pass);
    v1.patch('/b/:id', pass);
    v1.delete('/b/:id', pass);
    expect(routesOf(router.stack)).to.deep.equal([
      'GET /v1/a',
      'POST /v1/a',
      'PUT /v1/b/:id',
      'PATCH /v1/b/:id',
      'DELETE /v1/b/:id',
    ]);
  });

  it('serves every API route from the app under /v1, with no router mounted in between', () => {
    const guard: Guard = () => pass;
    // Building the app calls none of these: the routes use them per request.
    const deps = { environments: {}, keys: {}, logger: pino({ level: 'silent' }) } as unknown as AppDeps;
    const stack = (createApp(deps) as unknown as { router: { stack: Array<{ name: string }> } }).router.stack;
    expect(stack.map((layer) => layer.name)).not.to.include('router');
    const api = routesOf(apiRoutes(guard).stack).map((route) => route.replace(' /', ' /v1/'));
    expect(api).to.include('POST /v1/vouchers/apply');
    expect(routesOf(stack)).to.include.members(api);
  });
});
