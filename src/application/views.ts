import { hash } from 'node:crypto';
import { effectiveStatus, type Application, type Voucher } from '../domain/voucher/state.ts';
import type { VoucherView } from '../projections/voucherDetails.ts';
import type { ApplicationView } from '../projections/usageHistory.ts';

/** The voucher as the API shows it (status includes expiry by the clock). */
export const renderVoucher = (view: VoucherView, now: Date): Record<string, unknown> => {
  const out: Record<string, unknown> = {
    id: view.id,
    code: view.code,
    type: view.type,
    value: view.value,
    currency: view.currency,
  };
  if (view.config) out.config = view.config;
  if (view.validation_rules) out.validation_rules = view.validation_rules;
  Object.assign(out, {
    conditions: view.conditions,
    status: effectiveStatus(view, now),
    usage_count: view.usage_count,
    created_at: view.created_at,
    updated_at: view.updated_at,
  });
  return out;
};

/** The same view, built from the write model (used to answer writes without a read). */
export const viewFromState = (v: Voucher, createdSeq = 0): VoucherView => ({
  id: v.id,
  code: v.code,
  code_lower: v.code.toLowerCase(),
  type: v.type,
  value: v.value ?? null,
  currency: v.currency ?? null,
  config: v.config ?? null,
  conditions: v.conditions,
  ...(v.validationRules ? { validation_rules: v.validationRules } : {}),
  status: v.status,
  valid_until: v.conditions.valid_until ?? null,
  usage_count: v.usageCount,
  created_at: v.createdAt,
  updated_at: v.updatedAt,
  deleted_at: v.deactivatedAt ?? null,
  created_seq: createdSeq,
});

export interface ApplicationResponse {
  id: string;
  voucher: { id: string; code: string };
  order_id: string;
  customer_id: string | null;
  discount_amount: number;
  final_amount: number;
  currency: string | null;
  status: 'applied' | 'rolled_back';
  applied_at: string;
}

export const renderApplication = (voucher: { id: string; code: string }, a: Application): ApplicationResponse => ({
  id: a.id,
  voucher: { id: voucher.id, code: voucher.code },
  order_id: a.orderId,
  customer_id: a.customerId ?? null,
  discount_amount: a.discountAmount,
  final_amount: a.finalAmount,
  currency: a.currency,
  status: a.status,
  applied_at: a.appliedAt,
});

/** An item of `usage_history` and of `GET /vouchers/{id}/applications`. */
export const renderUsage = (a: ApplicationView): Record<string, unknown> => ({
  id: a.id,
  order_id: a.order_id,
  customer_id: a.customer_id,
  discount_amount: a.discount_amount,
  final_amount: a.final_amount,
  currency: a.currency,
  status: a.status,
  applied_at: a.applied_at,
});

/**
 * JSON with keys sorted at every level: equal values give equal strings. The same text as
 * `JSON.stringify` with a key-sorting replacer (stored fingerprints were made that way), written
 * out because the replacer rebuilt every object and cost about 15 µs per apply.
 */
export const canonicalJson = (value: unknown): string => canonical(value) as string; // undefined for undefined, as JSON.stringify

/** Like JSON.stringify for one value; undefined where JSON.stringify omits it. */
const canonical = (value: unknown): string | undefined => {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return canonical((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) out += `${i > 0 ? ',' : ''}${canonical(value[i]) ?? 'null'}`;
    return `${out}]`;
  }
  const keys = sortedKeys(value);
  let out = '{';
  let first = true;
  for (const key of keys) {
    const text = canonical((value as Record<string, unknown>)[key]);
    if (text === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${text}`;
    first = false;
  }
  return `${out}}`;
};

const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * The order JSON.stringify gave the replacer's rebuilt objects: array-index keys ("0", "17")
 * first in numeric order (as every JS object enumerates them), then the other keys sorted.
 * Object.keys already lists the index keys first, in numeric order.
 */
const sortedKeys = (value: object): string[] => {
  const keys = Object.keys(value);
  let indices = 0;
  while (indices < keys.length && ARRAY_INDEX.test(keys[indices]!) && Number(keys[indices]) < 4_294_967_295)
    indices += 1;
  sortFrom(keys, indices);
  return keys;
};

/**
 * Sorts `keys[from..]` in place in the order `Array.prototype.sort` gives strings (UTF-16 code
 * units). An insertion sort: the objects fingerprinted have a handful of keys, and the built-in
 * sort allocated about 1 KB of work arrays per call (4 KB per apply, the largest single allocation
 * of an apply). Longer lists go to the built-in sort.
 */
const sortFrom = (keys: string[], from: number): void => {
  if (keys.length - from > 32) {
    const tail = keys.slice(from).sort();
    for (let i = 0; i < tail.length; i += 1) keys[from + i] = tail[i]!;
    return;
  }
  for (let i = from + 1; i < keys.length; i += 1) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= from && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j -= 1;
    }
    keys[j + 1] = key;
  }
};

const hashed = (json: string): string => hash('sha256', json, 'base64url').slice(0, 22);
/** The fingerprint of no value (an apply without a customer): computed once. */
const NULL_FINGERPRINT = hashed('null');

export const fingerprint = (value: unknown): string =>
  value === null || value === undefined ? NULL_FINGERPRINT : hashed(canonicalJson(value));
