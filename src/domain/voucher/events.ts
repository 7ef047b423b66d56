import type { AppliedLine } from '../discount/types.ts';
import type { ValidationRule } from '../discount/rules.ts';

export type VoucherType = 'percentage' | 'fixed' | 'bogo' | 'tiered' | 'conditional' | 'stackable';
export type RecordedStatus = 'active' | 'inactive' | 'expired';

/** The voucher's `conditions`, as stored (absent members are not set). */
export interface Conditions {
  min_order_value?: number;
  max_uses?: number;
  valid_from?: string;
  valid_until?: string;
  customer_limit?: number;
  product_ids?: string[];
  excluded_product_ids?: string[];
}

/**
 * Events are facts, past tense, amounts in integer cents, timestamps as ISO strings with second
 * precision. Additive changes add an optional member defaulted in evolve; breaking changes get a
 * new type name and an upcaster (see docs/architecture.md, "Event versioning").
 */
export interface VoucherCreated {
  type: 'VoucherCreated';
  data: {
    voucherId: string;
    code: string;
    voucherType: VoucherType;
    value?: number;
    currency?: string;
    config?: Record<string, unknown>;
    conditions: Conditions;
    /** Optional (absent when none were given). */
    validationRules?: ValidationRule[];
    createdAt: string;
  };
}

export interface VoucherUpdated {
  type: 'VoucherUpdated';
  data: {
    voucherId: string;
    value?: number;
    currency?: string | null;
    /** The complete conditions after the merge. */
    conditions?: Conditions;
    /** Advanced types: the new config, replacing the stored one (absent: unchanged). */
    config?: Record<string, unknown>;
    /** The new validation rules, replacing the stored ones; null removes them (absent: unchanged). */
    validationRules?: ValidationRule[] | null;
    /** The recorded status after the update. */
    status: RecordedStatus;
    updatedAt: string;
  };
}

export interface VoucherDeactivated {
  type: 'VoucherDeactivated';
  data: { voucherId: string; deactivatedAt: string };
}

export interface VoucherApplied {
  type: 'VoucherApplied';
  data: {
    voucherId: string;
    applicationId: string;
    code: string;
    orderId: string;
    customerId?: string;
    customerSegment?: string;
    customerRegion?: string;
    orderValue: number;
    /**
     * What the event keeps of the order's items: counts and sums, bounded whatever the order's
     * size (the items themselves are not kept; the order's fingerprint below tells a repeat).
     */
    orderSummary: AppliedOrderSummary;
    discountAmount: number;
    finalAmount: number;
    currency: string | null;
    /**
     * The first APPLIED_LINES_KEPT (decide.ts) lines the discount was spread over, in order; the
     * full count and sum are in `orderSummary`.
     */
    appliedTo: AppliedLine[];
    /** Hashes of the order and customer inputs, to tell an idempotent repeat from a conflicting one. */
    orderFingerprint: string;
    customerFingerprint: string;
    appliedAt: string;
  };
}

/** The order's items as a VoucherApplied keeps them (all amounts in cents). */
export interface AppliedOrderSummary {
  /** Lines in `order.items` (0 when the order had none). */
  itemCount: number;
  /** Σ price × quantity over every line. */
  itemsValue: number;
  /** Lines the discount was spread over: the full length of the evaluation's `applied_to`. */
  appliedLineCount: number;
  /** Σ original_price over those lines: the item base the discount was priced on (0 for an order without items). */
  appliedLinesValue: number;
}

export interface VoucherApplicationRolledBack {
  type: 'VoucherApplicationRolledBack';
  data: {
    voucherId: string;
    applicationId: string;
    orderId: string;
    customerId?: string;
    discountAmount: number;
    finalAmount: number;
    orderValue: number;
    /**
     * The application's currency (absent in events recorded before it was carried: readers take
     * the voucher's currency then).
     */
    currency?: string | null;
    reason?: string;
    appliedAt: string;
    rolledBackAt: string;
  };
}

export interface VoucherExpired {
  type: 'VoucherExpired';
  data: { voucherId: string; validUntil: string; expiredAt: string };
}

export type VoucherEvent =
  VoucherCreated | VoucherUpdated | VoucherDeactivated | VoucherApplied | VoucherApplicationRolledBack | VoucherExpired;

/**
 * No application with this id will ever be recorded on the voucher: an order's reservation for it
 * (apply without an atomic two-stream append, application/orders.ts) was found orphaned and
 * given up. Written only when the voucher had not recorded the application; not public (no read
 * model or webhook takes it), it is the fence that keeps a late apply of that reservation out.
 */
export interface VoucherReservationVoided {
  type: 'VoucherReservationVoided';
  data: { voucherId: string; applicationId: string; orderId: string; voidedAt: string };
}

/** Every event the voucher stream holds: the public voucher events and the internal fence. */
export type VoucherStreamEvent = VoucherEvent | VoucherReservationVoided;

/** Event on the code stream `voucherCode-<lower-case code>`: the code belongs to this voucher. */
export interface VoucherCodeClaimed {
  type: 'VoucherCodeClaimed';
  data: { code: string; voucherId: string; claimedAt: string };
}

export const voucherStream = (voucherId: string): string => `voucher-${voucherId}`;
export const codeStream = (code: string): string => `voucherCode-${code.toLowerCase()}`;
