import type { Conditions, VoucherEvent } from '../domain/voucher/events.ts';
import type { PositionedEvent } from '../core/eventStore.ts';
import type { Projection } from '../core/projection.ts';

/** The voucher as stored: the list and retrieve endpoints add its usage count (voucherUsage.ts). */
export interface VoucherDoc {
  id: string;
  code: string;
  /** Lower-case code, for case-insensitive lookups and suggestions. */
  code_lower: string;
  type: string;
  value: number | null;
  currency: string | null;
  config: Record<string, unknown> | null;
  conditions: Conditions;
  /** Absent (older documents) or null: none. */
  validation_rules?: Array<Record<string, unknown>> | null;
  /** Recorded status; readers add expiry by the clock (`effectiveStatus`). */
  status: 'active' | 'inactive' | 'expired';
  /** Copy of conditions.valid_until (null when none), for status filters. */
  valid_until: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** Global position of the creation: a total order for "newest first". */
  created_seq: number;
  [key: string]: unknown;
}

/** The voucher as the list and retrieve endpoints show it. */
export type VoucherView = VoucherDoc & { usage_count: number };

type Recorded = PositionedEvent<VoucherEvent>;

const evolveView = (view: VoucherDoc | null, event: Recorded): VoucherDoc | null => {
  switch (event.type) {
    case 'VoucherCreated': {
      const d = event.data;
      return {
        id: d.voucherId,
        code: d.code,
        code_lower: d.code.toLowerCase(),
        type: d.voucherType,
        value: d.value ?? null,
        currency: d.currency ?? null,
        config: d.config ?? null,
        conditions: d.conditions,
        ...(d.validationRules ? { validation_rules: d.validationRules } : {}),
        status: 'active',
        valid_until: d.conditions.valid_until ?? null,
        created_at: d.createdAt,
        updated_at: d.createdAt,
        deleted_at: null,
        created_seq: event.position,
      };
    }
    case 'VoucherUpdated': {
      if (!view) return view;
      const d = event.data;
      const conditions = d.conditions ?? view.conditions;
      return {
        ...view,
        value: d.value ?? view.value,
        currency: d.currency === undefined ? view.currency : d.currency,
        config: d.config ?? view.config,
        ...(d.validationRules !== undefined ? { validation_rules: d.validationRules } : {}),
        conditions,
        valid_until: conditions.valid_until ?? null,
        status: d.status,
        updated_at: d.updatedAt,
        deleted_at: d.status === 'inactive' ? view.deleted_at : null,
      };
    }
    case 'VoucherDeactivated':
      if (!view) return view;
      return {
        ...view,
        status: 'inactive',
        deleted_at: event.data.deactivatedAt,
        updated_at: event.data.deactivatedAt,
      };
    case 'VoucherExpired':
      return view && { ...view, status: 'expired' };
    default:
      return view;
  }
};

export const voucherDetails: Projection<VoucherEvent, VoucherDoc> = {
  name: 'voucher_details',
  collection: 'vouchers',
  handles: ['VoucherCreated', 'VoucherUpdated', 'VoucherDeactivated', 'VoucherExpired'],
  documentId: (event) => event.data.voucherId,
  evolve: evolveView,
  indexes: [
    ['created_seq'],
    ['status', 'created_seq'],
    ['type', 'created_seq'],
    ['status', 'code_lower'],
    ['status', 'valid_until'],
  ],
};
