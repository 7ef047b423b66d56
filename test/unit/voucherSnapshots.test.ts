/**
 * Voucher snapshots (core/snapshotStore.ts, domain/voucher/snapshot.ts): a handler that loads
 * vouchers from snapshots and keys on demand decides exactly as one that folds every stream whole,
 * across restarts and beside another process writing snapshots of its own; its memory holds the
 * keys since the last snapshot, not the history.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { CommandHandler } from '../../src/core/commandHandler.ts';
import { DomainError } from '../../src/domain/errors.ts';
import type { VoucherCommand } from '../../src/domain/voucher/commands.ts';
import { decide, voucherDecider } from '../../src/domain/voucher/decide.ts';
import { voucherStream, type VoucherStreamEvent } from '../../src/domain/voucher/events.ts';
import { commandKeys, voucherSnapshots } from '../../src/domain/voucher/snapshot.ts';
import type { VoucherState } from '../../src/domain/voucher/state.ts';
import {
  DEFAULT_SNAPSHOT_EVERY,
  DEFAULT_SNAPSHOT_HELD_EVENTS,
  MIN_EVENTS_BETWEEN_SNAPSHOTS,
  snapshotAfter,
  snapshotDue,
  streamPhase,
  type SnapshotStore,
} from '../../src/core/snapshotStore.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { MemorySnapshotStore } from '../../src/infrastructure/snapshots/memorySnapshotStore.ts';

type Handler = CommandHandler<VoucherCommand, VoucherStreamEvent, VoucherState>;
const metadata = { now: new Date('2026-01-15T12:00:00Z') };

/** A small deterministic generator (mulberry32), so a failure can be replayed from its seed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const create = (voucherId: string): VoucherCommand => ({
  type: 'CreateVoucher',
  data: {
    voucherId,
    code: voucherId.toUpperCase(),
    voucherType: 'fixed',
    value: 500,
    currency: 'EUR',
    conditions: { max_uses: 40, customer_limit: 2 },
  },
  metadata,
});

/** A random command on the voucher: applies (new, repeated, conflicting), rollbacks, voids. */
const randomCommand = (next: () => number, voucherId: string, step: number): VoucherCommand => {
  const pick = (n: number) => Math.floor(next() * n);
  const roll = next();
  const orderId = `o${pick(30)}`;
  if (roll < 0.55) {
    const customer = next() < 0.8 ? { id: `k${pick(6)}` } : undefined;
    const fingerprint = `of-${orderId}-${pick(2)}`; // a repeat with another order half the time
    return {
      type: 'ApplyVoucher',
      data: {
        voucherId,
        applicationId: `va${step}`,
        orderId,
        order: { value: 10_000, currency: 'EUR' },
        ...(customer ? { customer } : {}),
        requestOrderFingerprint: fingerprint,
        orderFingerprint: fingerprint,
        customerFingerprint: customer ? `cf-${customer.id}` : 'cf-none',
      },
      metadata,
    };
  }
  if (roll < 0.9) {
    return { type: 'RollbackApplication', data: { voucherId, applicationId: `va${pick(step + 1)}` }, metadata };
  }
  return { type: 'VoidReservation', data: { voucherId, applicationId: `va${pick(step + 5)}`, orderId }, metadata };
};

/** An apply of voucher v1 to an order, by a customer when one is named. */
const applyV1 = (orderId: string, applicationId: string, customerId?: string): VoucherCommand => ({
  type: 'ApplyVoucher',
  data: {
    voucherId: 'v1',
    applicationId,
    orderId,
    order: { value: 10_000, currency: 'EUR' },
    ...(customerId !== undefined ? { customer: { id: customerId } } : {}),
    orderFingerprint: 'of',
    customerFingerprint: customerId === undefined ? 'cf' : `cf-${customerId}`,
  },
  metadata,
});

/** What a command answered: its events' types and the usage count, or its error code. */
const run = async (handler: Handler, command: VoucherCommand): Promise<unknown> => {
  try {
    const { result } = await handler.execute(voucherStream(command.data.voucherId), {
      decide: (state) => decide(command, state),
      keys: (state) => commandKeys(command, state),
      result: (state, events) => ({ events: events.map((e) => e.type), uses: state?.usageCount }),
    });
    return result;
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
};

/** Everything the voucher remembers, as JSON: its core, and every key's value as a loaded state reads it. */
const everything = async (handler: Handler, voucherId: string, keys: string[]) =>
  handler.read(
    voucherStream(voucherId),
    (state) =>
      JSON.parse(
        JSON.stringify({ core: voucherSnapshots.core(state), entries: voucherSnapshots.entries(state, keys) }),
      ) as unknown,
    () => keys,
  );

/** A voucher without conditions. */
const plain = (voucherId: string): VoucherCommand => {
  const command = create(voucherId) as Extract<VoucherCommand, { type: 'CreateVoucher' }>;
  return { ...command, data: { ...command.data, conditions: {} } };
};

const allKeys = (steps: number): string[] => [
  ...Array.from({ length: steps + 5 }, (_, i) => `a:va${i}`),
  ...Array.from({ length: 30 }, (_, i) => `o:o${i}`),
  ...Array.from({ length: 6 }, (_, i) => `c:k${i}`),
];

describe('voucher snapshots in the command handler', function () {
  this.timeout(60_000);
  let dir: string;
  const stores: Array<{ close(): Promise<void> }> = [];
  const eventStore = (name: string) => {
    const store = SqliteEventStore.open<VoucherStreamEvent>(path.join(dir, `${name}.db`));
    stores.push(store);
    return store;
  };
  const handler = (
    events: SqliteEventStore<VoucherStreamEvent>,
    snapshots?: { store: SnapshotStore; every: number },
  ): Handler =>
    new CommandHandler(events, voucherDecider, {
      ...(snapshots ? { snapshots: { ...snapshots, codec: voucherSnapshots } } : {}),
      onSnapshotError: (error) => {
        throw error;
      },
    });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'voucher-snapshots-'));
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const every of [1, 2, 3, 7]) {
    it(`decides every command as a whole fold does, restarts included (a snapshot every ${every} events)`, async () => {
      const next = random(every * 7919);
      const whole = handler(eventStore('whole'));
      const snapshotStore = new MemorySnapshotStore();
      const events = eventStore('snapshotted');
      let snapshotted = handler(events, { store: snapshotStore, every });
      const steps = 400;
      await run(whole, create('v1'));
      await run(snapshotted, create('v1'));
      for (let step = 0; step < steps; step += 1) {
        const command = randomCommand(next, 'v1', step);
        const expected = await run(whole, command);
        expect(await run(snapshotted, command), `step ${step}: ${JSON.stringify(command.data)}`).to.deep.equal(
          expected,
        );
        // a restart now and then: the cache is gone, the snapshot store stays
        if (next() < 0.05) snapshotted = handler(events, { store: snapshotStore, every });
      }
      const keys = allKeys(steps);
      expect(await everything(snapshotted, 'v1', keys)).to.deep.equal(await everything(whole, 'v1', keys));
      const restarted = handler(events, { store: snapshotStore, every });
      expect(await everything(restarted, 'v1', keys)).to.deep.equal(await everything(whole, 'v1', keys));
      expect((await snapshotStore.load(voucherStream('v1')))!.revision).to.be.greaterThan(0);
    });
  }

  for (const every of [1, 3, 7, 11]) {
    it(`decides every command as a whole fold does while its snapshots are still being written (a snapshot every ${every} events, a slow store)`, async () => {
      const next = random(every * 104_729);
      const whole = handler(eventStore('whole'));
      const snapshotStore = new MemorySnapshotStore();
      // each save is held until one to three more commands have been decided, whatever the
      // machine's speed, or for 20 ms where a command waits on it (all are let go before the
      // handler is asked to be idle)
      const save = snapshotStore.save.bind(snapshotStore);
      let overlapped = 0;
      let inFlight = 0;
      let decided = 0;
      const held = new Set<{ until: number; release: () => void }>();
      const letGo = (all = false) => {
        for (const save of [...held])
          if (all || save.until <= decided) {
            held.delete(save);
            save.release();
          }
      };
      sinon.stub(snapshotStore, 'save').callsFake(async (...args: Parameters<SnapshotStore['save']>) => {
        inFlight += 1;
        await new Promise<void>((release) => {
          const save = { until: decided + 1 + Math.floor(next() * 3), release };
          held.add(save);
          setTimeout(() => {
            if (held.delete(save)) release();
          }, 20);
        });
        inFlight -= 1;
        return save(...args);
      });
      const events = eventStore('snapshotted');
      let snapshotted = handler(events, { store: snapshotStore, every });
      await run(whole, create('v1'));
      await run(snapshotted, create('v1'));
      for (let step = 0; step < 300; step += 1) {
        const command = randomCommand(next, 'v1', step);
        const expected = await run(whole, command);
        if (inFlight > 0) overlapped += 1;
        expect(await run(snapshotted, command), `step ${step}: ${JSON.stringify(command.data)}`).to.deep.equal(
          expected,
        );
        decided += 1;
        letGo();
        if (next() < 0.03) {
          letGo(true);
          await snapshotted.idle();
          snapshotted = handler(events, { store: snapshotStore, every });
        }
      }
      expect(overlapped, 'commands decided while a snapshot was being written').to.be.greaterThan(5);
      const keys = allKeys(300);
      expect(await everything(snapshotted, 'v1', keys)).to.deep.equal(await everything(whole, 'v1', keys));
      letGo(true);
      await snapshotted.idle();
      const restarted = handler(events, { store: snapshotStore, every });
      expect(await everything(restarted, 'v1', keys)).to.deep.equal(await everything(whole, 'v1', keys));
    });
  }

  it('keeps only the entries changed since a snapshot written while batches went on', async () => {
    const snapshotStore = new MemorySnapshotStore();
    const save = snapshotStore.save.bind(snapshotStore);
    const answers: Array<() => void> = [];
    // saves wait until the test lets them answer
    sinon
      .stub(snapshotStore, 'save')
      .callsFake((...args: Parameters<SnapshotStore['save']>) =>
        new Promise<void>((resolve) => answers.push(resolve)).then(() => save(...args)),
      );
    const h = handler(eventStore('events'), { store: snapshotStore, every: 5 });
    // v6's phase at an interval of 5 is 0 (streamPhase): its snapshots come due at revisions 4, 9, …
    expect(streamPhase(voucherStream('v6'), 5)).to.equal(0);
    const applyV6 = (orderId: string, applicationId: string, customerId: string): VoucherCommand => {
      const command = applyV1(orderId, applicationId, customerId);
      return { ...command, data: { ...command.data, voucherId: 'v6' } } as VoucherCommand;
    };
    await run(h, plain('v6')); // revision 0
    for (let i = 0; i < 4; i += 1) await run(h, applyV6(`o${i}`, `va${i}`, `k${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).to.have.length(1); // five events folded: a save of revision 4 started
    for (let i = 4; i < 7; i += 1) await run(h, applyV6(`o${i}`, `va${i}`, `k${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).to.have.length(1); // one save at a time
    answers.shift()!();
    await h.idle();
    expect((await snapshotStore.load(voucherStream('v6')))!.revision).to.equal(4);
    const held = await h.read(voucherStream('v6'), (state) => [...state!.applications.keys()].sort());
    expect(held).to.deep.equal(['va4', 'va5', 'va6']);
    // the next snapshot writes what changed after revision 4
    for (let i = 7; i < 9; i += 1) await run(h, applyV6(`o${i}`, `va${i}`, `k${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).to.have.length(1);
    answers.shift()!();
    await h.idle();
    expect((await snapshotStore.load(voucherStream('v6')))!.revision).to.equal(9);
    const entries = await snapshotStore.entries(voucherStream('v6'), ['a:va3', 'a:va4', 'a:va8']);
    expect([...entries].map(([key, e]) => [key, e.revision])).to.deep.equal([
      ['a:va3', 4],
      ['a:va4', 9],
      ['a:va8', 9],
    ]);
    expect(await h.read(voucherStream('v6'), (state) => state!.usageCount)).to.equal(9);
  });

  it('two processes writing snapshots of the same voucher each load again when the other moved past them', async () => {
    const next = random(42);
    const whole = handler(eventStore('whole'));
    const snapshotStore = new MemorySnapshotStore();
    const file = path.join(dir, 'shared.db');
    // each sees the other's commits in the next turn (tokenFreshMs: commandHandler.test.ts)
    const first = SqliteEventStore.open<VoucherStreamEvent>(file, { tokenFreshMs: 0 });
    const second = SqliteEventStore.open<VoucherStreamEvent>(file, { tokenFreshMs: 0 }); // another process's connection
    stores.push(first, second);
    const processes = [
      handler(first, { store: snapshotStore, every: 2 }),
      handler(second, { store: snapshotStore, every: 3 }),
    ];
    const entries = sinon.spy(snapshotStore, 'entries');
    await run(whole, create('v1'));
    await run(processes[0]!, create('v1'));
    for (let step = 0; step < 300; step += 1) {
      const command = randomCommand(next, 'v1', step);
      const expected = await run(whole, command);
      const by = processes[Math.floor(next() * 2)]!;
      expect(await run(by, command), `step ${step}`).to.deep.equal(expected);
    }
    const keys = allKeys(300);
    for (const p of processes)
      expect(await everything(p, 'v1', keys)).to.deep.equal(await everything(whole, 'v1', keys));
    expect(entries.callCount).to.be.greaterThan(0);
  });

  it('keeps in memory the keys since the last snapshot, not every application', async () => {
    const snapshotStore = new MemorySnapshotStore();
    const h = handler(eventStore('events'), { store: snapshotStore, every: 50 });
    const wholeHandler = handler(eventStore('whole'));
    for (const target of [h, wholeHandler]) {
      await run(target, plain('v1'));
      for (let i = 0; i < 1_000; i += 1) {
        await run(target, applyV1(`o${i}`, `va${i}`, `k${i}`));
      }
    }
    const held = (state: VoucherState) => ({
      uses: state!.usageCount,
      applications: state!.applications.size,
      orders: state!.liveByOrder.size,
      customers: state!.customerUses.size,
    });
    expect(await wholeHandler.read(voucherStream('v1'), held)).to.deep.equal({
      uses: 1_000,
      applications: 1_000,
      orders: 1_000,
      customers: 1_000,
    });
    const kept = await h.read(voucherStream('v1'), held);
    expect(kept.uses).to.equal(1_000);
    expect(kept.applications).to.be.at.most(50);
    expect(kept.orders).to.be.at.most(50);
    expect(kept.customers).to.be.at.most(50);
  });

  it('with many vouchers cached, snapshots each after its share of the events all may hold', async () => {
    /** Applications held in memory per voucher after 30 applies on each of ten, round robin. */
    const heldPerVoucher = async (held: number, every = 50) => {
      const h = new CommandHandler(eventStore(`held-${held}`), voucherDecider, {
        snapshots: { store: new MemorySnapshotStore(), codec: voucherSnapshots, every, held },
        onSnapshotError: (error) => {
          throw error;
        },
      });
      const vouchers = Array.from({ length: 10 }, (_, i) => `v${i}`);
      for (const voucherId of vouchers) await run(h, plain(voucherId));
      for (let round = 0; round < 30; round += 1) {
        for (const voucherId of vouchers) {
          const command = applyV1(`${voucherId}-o${round}`, `${voucherId}-a${round}`, `${voucherId}-k${round}`);
          expect(await run(h, { ...command, data: { ...command.data, voucherId } } as VoucherCommand)).to.deep.equal({
            events: ['VoucherApplied'],
            uses: round + 1,
          });
        }
      }
      return Promise.all(
        vouchers.map((voucherId) => h.read(voucherStream(voucherId), (state) => state!.applications.size)),
      );
    };
    // 100 events for ten vouchers: a snapshot every 10 events of each instead of every 50
    const shared = await heldPerVoucher(100);
    expect(Math.max(...shared)).to.be.at.most(10);
    // neither a budget nor an interval the ten vouchers reach: each holds its 30 applications
    // (an interval of 100,000 events at the streams' phases, all far from 31 events before a multiple)
    expect(await heldPerVoucher(1_000_000, 1_000_000)).to.deep.equal(Array.from({ length: 10 }, () => 30));
  });

  it('a stream comes due at its phase: never more than the interval after its snapshot, never sooner than the minimum, then every interval', () => {
    for (let interval = 1; interval <= 12; interval += 1)
      for (let phase = 0; phase < interval; phase += 1)
        for (let base = -1; base <= 30; base += 1) {
          const at = `interval ${interval}, phase ${phase}, base ${base}`;
          let due = base + 1;
          while (!snapshotDue(base, due, interval, phase)) due += 1;
          expect(due - base, at).to.be.at.most(interval);
          expect(due - base, at).to.be.at.least(Math.min(interval, MIN_EVENTS_BETWEEN_SNAPSHOTS));
          // the next ones, each from the one before, keep to the same bounds
          for (let k = 0, last = due; k < 3; k += 1) {
            let next = last + 1;
            while (!snapshotDue(last, next, interval, phase)) next += 1;
            expect(next - last, `${at}, snapshot ${k + 2}`).to.be.within(
              Math.min(interval, MIN_EVENTS_BETWEEN_SNAPSHOTS),
              interval,
            );
            last = next;
          }
          // in steady use (a snapshot where the count passed a multiple), exactly one interval apart
          const steady = interval * 3 - phase - 1; // revision + 1 + phase is a multiple
          let next = steady + 1;
          while (!snapshotDue(steady, next, interval, phase)) next += 1;
          expect(next - steady, `${at}, steady`).to.equal(interval);
        }
    // phase 0 is the rule without phases: due once `interval` events came after the snapshot
    expect(snapshotDue(-1, 18, 20, 0)).to.equal(false);
    expect(snapshotDue(-1, 19, 20, 0)).to.equal(true);
    expect(snapshotDue(19, 39, 20, 0)).to.equal(true);
  });

  it("spreads 1,000 voucher streams over an interval's phases, the same in every process", () => {
    const counts = new Array<number>(20).fill(0);
    for (let i = 0; i < 1_000; i += 1) counts[streamPhase(voucherStream(`v_${i}`), 20)]! += 1;
    expect(Math.min(...counts)).to.be.at.least(25);
    expect(Math.max(...counts)).to.be.at.most(80);
    expect(streamPhase('voucher-v_1', 20)).to.equal(streamPhase('voucher-v_1', 20));
    expect(streamPhase('anything', 1)).to.equal(0);
  });

  it('vouchers applied in turn come due for their snapshots in different turns', async () => {
    const store = new MemorySnapshotStore();
    const saves: string[] = [];
    const save = store.save.bind(store);
    sinon.stub(store, 'save').callsFake((streamId, ...rest) => {
      saves.push(streamId);
      return save(streamId, ...rest);
    });
    const h = new CommandHandler(eventStore('in-turn'), voucherDecider, {
      snapshots: { store, codec: voucherSnapshots, every: 10 },
      onSnapshotError: (error) => {
        throw error;
      },
    });
    const vouchers = Array.from({ length: 10 }, (_, i) => `v${i}`);
    for (const voucherId of vouchers) await run(h, plain(voucherId));
    const perTurn: number[] = [];
    for (let turn = 0; turn < 20; turn += 1) {
      const before = saves.length;
      for (const voucherId of vouchers) {
        const command = applyV1(`${voucherId}-o${turn}`, `${voucherId}-a${turn}`);
        await run(h, { ...command, data: { ...command.data, voucherId } } as VoucherCommand);
      }
      await h.idle();
      perTurn.push(saves.length - before);
    }
    // each voucher saved every ten of its events: its 21 events pass two or three multiples
    for (const voucherId of vouchers)
      expect(saves.filter((s) => s === voucherStream(voucherId)).length, voucherId).to.be.within(2, 3);
    // all at phase 0, the ten would save in the same two turns; at their phases, in several
    expect(Math.max(...perTurn), `saves per turn: ${perTurn.join(' ')}`).to.be.at.most(5);
  });

  it('snapshots after `every` events, or after a share of the budget when many aggregates are cached', () => {
    expect(snapshotAfter(100, 20_000, 1)).to.equal(100);
    expect(snapshotAfter(100, 20_000, 200)).to.equal(100);
    expect(snapshotAfter(100, 20_000, 1_000)).to.equal(20);
    expect(snapshotAfter(100, 20_000, 3_000)).to.equal(6);
    expect(snapshotAfter(100, 20_000, 10_000)).to.equal(MIN_EVENTS_BETWEEN_SNAPSHOTS);
    expect(snapshotAfter(3, 20_000, 10_000)).to.equal(3);
    expect(snapshotAfter(100, 20_000, 0)).to.equal(100);
    // the defaults (decision 107): up to 100 vouchers cached, every 100 events; 1,000, every 10
    expect(snapshotAfter(DEFAULT_SNAPSHOT_EVERY, DEFAULT_SNAPSHOT_HELD_EVENTS, 100)).to.equal(100);
    expect(snapshotAfter(DEFAULT_SNAPSHOT_EVERY, DEFAULT_SNAPSHOT_HELD_EVENTS, 1_000)).to.equal(10);
  });

  it('a snapshot that cannot be written is reported and changes no answer; the next load folds from the last one', async () => {
    const snapshotStore = new MemorySnapshotStore();
    const events = eventStore('events');
    const errors: unknown[] = [];
    const h = new CommandHandler(events, voucherDecider, {
      snapshots: { store: snapshotStore, codec: voucherSnapshots, every: 2 },
      onSnapshotError: (error) => errors.push(error),
    });
    await run(h, plain('v1'));
    const save = sinon.stub(snapshotStore, 'save').rejects(new Error('disk full'));
    const answers = [];
    for (let i = 0; i < 5; i += 1) {
      answers.push(await run(h, applyV1(`o${i}`, `va${i}`)));
    }
    expect(answers.map((a) => (a as { uses: number }).uses)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(errors.length).to.be.greaterThan(0);
    save.restore();
    const restarted = handler(events, { store: snapshotStore, every: 2 });
    expect(
      await run(restarted, { type: 'RollbackApplication', data: { voucherId: 'v1', applicationId: 'va3' }, metadata }),
    ).to.deep.equal({
      events: ['VoucherApplicationRolledBack'],
      uses: 4,
    });
  });

  it('refuses a decision on a key the partial state did not load, rather than decide it wrong', async () => {
    const snapshotStore = new MemorySnapshotStore();
    const h = handler(eventStore('events'), { store: snapshotStore, every: 1 });
    await run(h, plain('v1'));
    const apply = (orderId: string): VoucherCommand => applyV1(orderId, `va-${orderId}`);
    await run(h, apply('o1'));
    await h.idle(); // its snapshot written: the voucher now holds its core only, keys on demand
    // the same order again without naming its keys: the state does not know o1 is applied
    const failure = await h
      .execute(voucherStream('v1'), { decide: (state) => decide(apply('o1'), state), result: () => undefined })
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect(String(failure)).to.match(/keys not loaded before deciding: a:va-o1, o:o1/);
    // named, it is the idempotent repeat it is
    expect(await run(h, apply('o1'))).to.deep.equal({ events: [], uses: 1 });
  });
});
