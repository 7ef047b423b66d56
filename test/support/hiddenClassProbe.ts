/**
 * Do the objects the command handler keeps for a long time share V8 hidden classes? Run in a child
 * process with V8's natives syntax (test/unit/hiddenClasses.test.ts):
 *   node --allow-natives-syntax --import tsx test/support/hiddenClassProbe.ts
 *
 * Folds events that went through JSON, as read from a store: applications and rollbacks into a
 * voucher, confirmations and reservations into orders. Prints one JSON line: for each kind of object, how many
 * neighbouring pairs there were and how many of them shared a hidden class.
 */
import { voucherDecider } from '../../src/domain/voucher/decide.ts';
import type { VoucherEvent } from '../../src/domain/voucher/events.ts';
import { evolveOrder, liveVouchers, reservationsOf } from '../../src/domain/order/state.ts';
import type { OrderEvent } from '../../src/domain/order/events.ts';
import {
  orderVoucherConfirmed,
  voucherApplicationRolledBack,
  voucherApplied,
  voucherCreated,
} from '../fixtures/events.ts';

// V8's natives syntax is only parsed at run time (with the flag), not by the TypeScript compiler.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const stored = <T>(event: T): T => JSON.parse(JSON.stringify(event)) as T;
const pairs = (objects: object[]) => ({
  pairs: objects.length - 1,
  same: objects.slice(1).filter((o, i) => haveSameMap(o, objects[i]!)).length,
});

const N = 40;
const events: VoucherEvent[] = [stored(voucherCreated())];
for (let n = 0; n < N; n += 1) {
  events.push(stored(voucherApplied({ applicationId: `app_${n}`, orderId: `o_${n}`, customerId: `c_${n}` })));
}
for (let n = 0; n < N; n += 2) {
  events.push(
    stored(voucherApplicationRolledBack({ applicationId: `app_${n}`, orderId: `o_${n}`, customerId: `c_${n}` })),
  );
}
const voucher = events.reduce(voucherDecider.evolve, voucherDecider.initialState())!;
const applications = [...voucher.applications.values()];

// reservations: an order reserved for a voucher, its profile as a confirmation carries it
const reserved = Array.from({ length: N }, (_, n) => {
  const {
    discountAmount: _discount,
    confirmedAt: _at,
    ...data
  } = orderVoucherConfirmed({
    orderId: `r_${n}`,
    applicationId: `app_r_${n}`,
  }).data;
  return evolveOrder(
    null,
    stored<OrderEvent>({ type: 'OrderVoucherReserved', data: { ...data, reservedAt: '2026-01-15T12:00:00Z' } }),
  )!;
});

const orders = Array.from({ length: N }, (_, n) =>
  evolveOrder(null, stored<OrderEvent>(orderVoucherConfirmed({ orderId: `o_${n}`, applicationId: `app_${n}` })))!,
);

process.stdout.write(
  `${JSON.stringify({
    applied: pairs(applications.filter((a) => a.status === 'applied')),
    rolledBack: pairs(applications.filter((a) => a.status === 'rolled_back')),
    orders: pairs(orders),
    orderVouchers: pairs(orders.flatMap((o) => liveVouchers(o))),
    reservations: pairs(reserved.flatMap((o) => reservationsOf(o))),
  })}\n`,
);
