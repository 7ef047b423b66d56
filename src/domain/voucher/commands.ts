import type { Customer, Order } from '../discount/types.ts';
import type { Conditions, VoucherType } from './events.ts';
import type { ValidationRule } from '../discount/rules.ts';
import type { OrderVoucher } from '../discount/stacking.ts';

/** Time and ids come in on the command; decide never reads a clock or draws randomness. */
export interface CommandMetadata {
  now: Date;
}

/** In an update, a condition sent as null is removed; one not sent keeps its stored value. */
export type ConditionsPatch = { [K in keyof Conditions]?: Conditions[K] | null };

export type VoucherCommand =
  | {
      type: 'CreateVoucher';
      data: {
        voucherId: string;
        code: string;
        voucherType: VoucherType;
        value?: number;
        currency?: string;
        config?: Record<string, unknown>;
        conditions?: Conditions;
        validationRules?: ValidationRule[];
      };
      metadata: CommandMetadata;
    }
  | {
      type: 'UpdateVoucher';
      data: {
        voucherId: string;
        value?: number;
        currency?: string | null;
        conditions?: ConditionsPatch;
        status?: 'active' | 'inactive';
        /** Replaces the stored config (advanced types only). */
        config?: Record<string, unknown>;
        /** Replaces the stored validation rules; null removes them. */
        validationRules?: ValidationRule[] | null;
      };
      metadata: CommandMetadata;
    }
  | { type: 'DeactivateVoucher'; data: { voucherId: string }; metadata: CommandMetadata }
  | {
      type: 'ApplyVoucher';
      data: {
        voucherId: string;
        applicationId: string;
        orderId: string;
        /** The order to price: from the request, else from the kept quote; absent when neither. */
        order?: Order;
        customer?: Customer;
        /** Fingerprints of what the request itself carried (absent: not sent), for repeat detection. */
        requestOrderFingerprint?: string;
        requestCustomerFingerprint?: string;
        /** Fingerprints of the order and customer priced, stored with the application. */
        orderFingerprint: string;
        customerFingerprint: string;
        /** The vouchers the order carried before this one (from the order stream), for stacking. */
        orderVouchers?: OrderVoucher[];
      };
      metadata: CommandMetadata;
    }
  | {
      type: 'RollbackApplication';
      data: { voucherId: string; applicationId: string; reason?: string };
      metadata: CommandMetadata;
    }
  | { type: 'ExpireVoucher'; data: { voucherId: string }; metadata: CommandMetadata }
  | {
      /**
       * Settles an order's reservation for `applicationId`: nothing when the voucher recorded that
       * application, else the reservation is voided (no apply with that id is accepted after).
       */
      type: 'VoidReservation';
      data: { voucherId: string; applicationId: string; orderId: string };
      metadata: CommandMetadata;
    };
