import type { Request } from 'express';
import { DomainError, invalidRequest } from '../../domain/errors.ts';
import { isoSeconds, parseTimestamp } from '../../domain/clock.ts';
import type { Conditions } from '../../domain/voucher/events.ts';
import {
  applyVoucher,
  rollbackApplication,
  validateVoucher,
  type ApplyInput,
  type CodeLookup,
} from '../../application/redemptions.ts';
import { getVoucher, listApplications, listVouchers, type ListVouchersQuery } from '../../application/queries.ts';
import {
  createVoucher,
  deactivateVoucher,
  updateVoucher,
  type CreateVoucherInput,
  type UpdateVoucherInput,
} from '../../application/vouchers.ts';
import { renderVoucher } from '../../application/views.ts';
import type { Customer, Order } from '../../domain/discount/types.ts';
import type { Guard } from '../auth.ts';
import type { Routes } from './mount.ts';
import { idempotency } from '../idempotency.ts';
import * as schemas from '../schemas.ts';
import { compileBody, compileQuery } from '../validation.ts';

const parseCreate = compileBody<CreateVoucherInput>(schemas.createVoucherSchema);
const parseUpdate = compileBody<UpdateVoucherInput>(schemas.updateVoucherSchema);
const parseValidate = compileBody<{ code: string; order: Order; customer?: Customer }>(schemas.validateSchema);
const parseApply = compileBody<ApplyInput>(schemas.applySchema);
const parseRollback = compileBody<{ reason?: string }>(schemas.rollbackSchema);
const parseList = compileQuery<ListVouchersQuery>(schemas.listVouchersQuery);
const parsePage = compileQuery<{ limit: number; offset: number }>(schemas.pageQuery);
const parseNoQuery = compileQuery<Record<string, never>>(schemas.emptyQuery);

const VOUCHER_ID = /^v_[A-Za-z0-9]{1,64}$/;
const APPLICATION_ID = /^va_[A-Za-z0-9]{1,64}$/;

const voucherIdOf = (req: Request): string => {
  const id = String(req.params.voucherId);
  if (!VOUCHER_ID.test(id))
    throw new DomainError('VOUCHER_NOT_FOUND', `Voucher ${id} was not found`, { voucher_id: id });
  return id;
};

/** A timestamp the schema accepted (format date-time is parseTimestamp), in UTC with second precision. */
const utcSeconds = (text: string): string => isoSeconds(parseTimestamp(text)!);

/** Timestamps are kept in UTC with second precision, so they compare as strings. */
const normaliseTimes = <T extends { valid_from?: string | null; valid_until?: string | null }>(
  c: T | undefined,
): T | undefined => {
  if (!c) return c;
  const out = { ...c };
  if (typeof out.valid_from === 'string') out.valid_from = utcSeconds(out.valid_from);
  if (typeof out.valid_until === 'string') out.valid_until = utcSeconds(out.valid_until);
  return out;
};

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * `created_after` / `created_before` as the exclusive bounds the list compares with. A date
 * stands for the start of that day (UTC): `created_before=2026-11-23` is before its midnight, and
 * `created_after=2026-11-23` includes the whole day, so its bound is the second before midnight
 * (created_at has second precision, so "> 23:59:59 the day before" is ">= 00:00:00").
 */
const createdBound = (value: string | undefined, side: 'after' | 'before'): string | undefined => {
  if (value === undefined) return undefined;
  if (!DATE.test(value)) return utcSeconds(value);
  if (side === 'after' && value === '0000-01-01') return undefined; // every voucher: no bound
  const midnight = Date.parse(`${value}T00:00:00Z`);
  return isoSeconds(new Date(side === 'after' ? midnight - 1_000 : midnight));
};

const rejectImmutable = (body: unknown): void => {
  if (!body || typeof body !== 'object') return;
  const sent = schemas.IMMUTABLE_FIELDS.filter((field) => field in body);
  if (sent.length > 0) throw invalidRequest(sent.map((field) => ({ field, message: 'is immutable' })));
};

const meta = (req: Request) => ({ correlationId: req.requestId, apiKeyId: req.apiKey.id });

/** An unknown code's similar codes are shown only to a key that may read vouchers. */
const lookup = (req: Request): CodeLookup => ({ suggest: req.apiKey.scopes.includes('vouchers:read') });

/**
 * The /vouchers routes. The guard (authenticate, rate limit of the route's group, scope) runs per
 * route, so a path that matches no route is 404 NOT_FOUND whatever the key.
 */
export const voucherRoutes = (routes: Routes, guard: Guard): void => {
  routes.post('/vouchers', guard('vouchers:write', 'create'), idempotency(), async (req, res) => {
    const input = parseCreate(req.body);
    const view = await createVoucher(
      req.ctx,
      { ...input, conditions: normaliseTimes(input.conditions) as Conditions | undefined },
      meta(req),
    );
    res.status(201).location(`/v1/vouchers/${view.id}`).json(renderVoucher(view, req.ctx.clock.now()));
  });

  routes.get('/vouchers', guard('vouchers:read', 'read'), async (req, res) => {
    const query = parseList({ ...req.query });
    const page = await listVouchers(req.ctx, {
      ...query,
      created_after: createdBound(query.created_after, 'after'),
      created_before: createdBound(query.created_before, 'before'),
    });
    res.json(page);
  });

  routes.post('/vouchers/validate', guard('vouchers:redeem', 'validate'), async (req, res) => {
    const body = parseValidate(req.body);
    res.json(await validateVoucher(req.ctx, body.code, body.order, body.customer, lookup(req), req.apiKey.id));
  });

  routes.post(
    '/vouchers/apply',
    guard('vouchers:redeem', 'apply'),
    idempotency({ replayAs200: true }),
    async (req, res) => {
      const outcome = await applyVoucher(req.ctx, parseApply(req.body), meta(req), lookup(req));
      if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
      res.status(outcome.replayed ? 200 : 201).json(outcome.application);
    },
  );

  routes.post('/vouchers/applications/:applicationId/rollback', guard('vouchers:redeem', 'other'), async (req, res) => {
    const id = String(req.params.applicationId);
    if (!APPLICATION_ID.test(id))
      throw new DomainError('APPLICATION_NOT_FOUND', `Application ${id} was not found`, { application_id: id });
    const body = parseRollback(req.body ?? {});
    res.json(await rollbackApplication(req.ctx, id, body.reason, meta(req)));
  });

  routes.get('/vouchers/:voucherId', guard('vouchers:read', 'read'), async (req, res) => {
    parseNoQuery({ ...req.query });
    res.json(await getVoucher(req.ctx, voucherIdOf(req)));
  });

  routes.get('/vouchers/:voucherId/applications', guard('vouchers:read', 'read'), async (req, res) => {
    const page = parsePage({ ...req.query });
    res.json(await listApplications(req.ctx, voucherIdOf(req), page.limit, page.offset));
  });

  routes.put('/vouchers/:voucherId', guard('vouchers:write', 'other'), async (req, res) => {
    const id = voucherIdOf(req);
    rejectImmutable(req.body);
    const input = parseUpdate(req.body);
    const view = await updateVoucher(
      req.ctx,
      id,
      { ...input, conditions: normaliseTimes(input.conditions) },
      meta(req),
    );
    res.json(renderVoucher(view, req.ctx.clock.now()));
  });

  routes.delete('/vouchers/:voucherId', guard('vouchers:delete', 'other'), async (req, res) => {
    const view = await deactivateVoucher(req.ctx, voucherIdOf(req), meta(req));
    res.json({ id: view.id, code: view.code, status: 'inactive', deleted_at: view.deleted_at });
  });
};
