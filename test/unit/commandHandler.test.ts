import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { CommandHandler, type CommandHandlerOptions, type Work } from '../../src/core/commandHandler.ts';
import { DomainError } from '../../src/domain/errors.ts';
import type { VoucherCommand } from '../../src/domain/voucher/commands.ts';
import { decide, voucherDecider } from '../../src/domain/voucher/decide.ts';
import {
  voucherStream,
  type Conditions,
  type VoucherStreamEvent as VoucherEvent,
} from '../../src/domain/voucher/events.ts';
import { evolve, initialState, type VoucherState } from '../../src/domain/voucher/state.ts';
import { WrongExpectedRevisionError, type RecordedEvent } from '../../src/core/eventStore.ts';
import type { AnyEvent } from '../../src/core/decider.ts';
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';

const metadata = { now: new Date('2026-01-15T12:00:00Z') };
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

const createCmd = (voucherId: string, conditions: Conditions = {}): VoucherCommand => ({
  type: 'CreateVoucher',
  data: { voucherId, code: voucherId.toUpperCase(), voucherType: 'percentage', value: 10, conditions },
  metadata,
});
const applyCmd = (
  voucherId: string,
  orderId: string,
  extra: { requestOrderFingerprint?: string } = {},
): VoucherCommand => ({
  type: 'ApplyVoucher',
  data: {
    voucherId,
    applicationId: `va_${orderId}`,
    orderId,
    order: { value: 10_000 },
    orderFingerprint: `of-${orderId}`,
    customerFingerprint: 'cf',
    ...extra,
  },
  metadata,
});
/** The work the application layer builds: decide the command; the result is the usage count after it. */
const work = (command: VoucherCommand): Work<VoucherEvent, VoucherState, number | undefined> => ({
  decide: (state) => decide(command, state),
  result: (state) => state?.usageCount,
  metadata: { correlationId: 'test' },
});

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  let value: unknown;
  try {
    value = await promise;
  } catch (error) {
    return error;
  }
  return expect.fail(`expected a rejection, got ${JSON.stringify(value)}`);
};
const summary = (events: RecordedEvent<VoucherEvent>[]) =>
  events.map((e) => [e.revision, e.type === 'VoucherApplied' ? e.data.orderId : e.type]);
/** The conflict error the service supplies (composition.ts). */
const conflictError = () =>
  new DomainError('CONCURRENT_MODIFICATION', 'The voucher is being changed by another writer', {});

describe('CommandHandler over SqliteEventStore', () => {
  let dir: string;
  /** Voucher events, and others the tests write beside them (the handler must ignore other streams). */
  let store: SqliteEventStore<VoucherEvent | AnyEvent>;
  const handler = (options?: CommandHandlerOptions<VoucherEvent, VoucherState>) =>
    new CommandHandler<VoucherCommand, VoucherEvent, VoucherState, AnyEvent>(store, voucherDecider, {
      conflictError,
      ...options,
    });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'command-handler-'));
    // Another process is a second connection here, committing through the same writer thread within
    // a millisecond: with tokenFreshMs 0 the token reads the connection each turn and the next turn
    // sees its commits (the bound with the default: sqliteWriterThread.test.ts).
    store = SqliteEventStore.open<VoucherEvent | AnyEvent>(path.join(dir, 'events.db'), { tokenFreshMs: 0 });
  });
  afterEach(async () => {
    sinon.restore();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('(a) reads nothing more while no other connection writes: 2,000 applications, one read', async () => {
    const stream = voucherStream('v_hot');
    const h = handler();
    const read = sinon.spy(store, 'readStream');
    expect((await h.execute(stream, work(createCmd('v_hot')))).result).to.equal(0);
    await Promise.all(range(2_000).map((i) => h.execute(stream, work(applyCmd('v_hot', `o${i}`)))));
    expect(read.getCalls().map((c) => c.args)).to.deep.equal([[stream, { fromRevision: 0 }]]);
    expect((await h.execute(stream, work(applyCmd('v_hot', 'o2000')))).result).to.equal(2_001);
    expect(read.callCount).to.equal(1);

    // A handler without the cache pays the full read.
    read.resetHistory();
    expect((await handler().execute(stream, work(applyCmd('v_hot', 'o2001')))).result).to.equal(2_002);
    expect(read.firstCall.args).to.deep.equal([stream, { fromRevision: 0 }]);
    expect(await read.firstCall.returnValue).to.have.length(2_002);
  });

  it('(a) after another connection wrote, reads only the events after the cached revision', async () => {
    const stream = voucherStream('v_shared');
    const h = handler();
    await h.execute(stream, work(createCmd('v_shared')));
    await Promise.all(range(50).map((i) => h.execute(stream, work(applyCmd('v_shared', `o${i}`)))));
    const other = SqliteEventStore.open<VoucherEvent | AnyEvent>(path.join(dir, 'events.db'));
    try {
      await other.appendToStream('unrelated', [{ type: 'Noise', data: {} }]);
      const read = sinon.spy(store, 'readStream');
      expect((await h.execute(stream, work(applyCmd('v_shared', 'o50')))).result).to.equal(51);
      expect(read.getCalls().map((c) => c.args)).to.deep.equal([[stream, { fromRevision: 51 }]]);
      expect(await read.firstCall.returnValue).to.deep.equal([]);
      // the token is current again: the next command reads nothing
      await h.execute(stream, work(applyCmd('v_shared', 'o51')));
      expect(read.callCount).to.equal(1);
    } finally {
      await other.close();
    }
  });

  it('(b) 100 commands issued at once on one stream are appended in few appends, in order', async () => {
    const stream = voucherStream('v_burst');
    const h = handler();
    const append = sinon.spy(store, 'appendToStream');
    const outcomes = await Promise.all([
      h.execute(stream, work(createCmd('v_burst'))),
      ...range(99).map((i) => h.execute(stream, work(applyCmd('v_burst', `o${i}`)))),
    ]);
    expect(append.callCount).to.be.lessThan(100);
    expect(append.callCount).to.be.at.most(2);
    expect(outcomes.map((o) => o.result)).to.deep.equal(range(100));
    const events = await store.readStream<VoucherEvent>(stream);
    expect(summary(events)).to.deep.equal([[0, 'VoucherCreated'], ...range(99).map((i) => [i + 1, `o${i}`])]);
    expect(events.every((e) => e.metadata.correlationId === 'test')).to.equal(true);
    expect(outcomes.at(-1)!.position).to.equal(events.at(-1)!.position);
  });

  it('a work that decides nothing appends nothing and reports position 0', async () => {
    const stream = voucherStream('v_read');
    const h = handler();
    await h.execute(stream, work(createCmd('v_read')));
    const append = sinon.spy(store, 'appendToStream');
    const outcome = await h.execute(stream, { decide: () => [], result: (state) => state?.code });
    expect(outcome).to.deep.equal({ result: 'V_READ', position: 0 });
    expect(append.callCount).to.equal(0);
  });

  describe('(c) a conflict with another writer', () => {
    /** Another process (a second connection) appends `orderId`'s application just before the handler's next append. */
    const interfereBeforeNextAppend = async (stream: string, voucherId: string, orderId: string) => {
      const state = (await store.readStream<VoucherEvent>(stream)).reduce<VoucherState>(evolve, initialState());
      const theirs = decide(applyCmd(voucherId, orderId), state);
      const other = SqliteEventStore.open<VoucherEvent | AnyEvent>(path.join(dir, 'events.db'));
      const realAppend = store.appendToStream.bind(store);
      let done = false;
      const append = sinon.stub(store, 'appendToStream').callsFake(async (id, events, options) => {
        if (!done) {
          done = true;
          await other.appendToStream(id, theirs, { expectedRevision: state!.usageCount });
          await other.close();
        }
        return realAppend(id, events, options);
      });
      return { append, read: sinon.spy(store, 'readStream') };
    };

    it('is retried: the command is re-decided on the fresh state', async () => {
      const stream = voucherStream('v_c');
      const h = handler();
      await h.execute(stream, work(createCmd('v_c', { max_uses: 2 })));
      const { append, read } = await interfereBeforeNextAppend(stream, 'v_c', 'theirs');

      const outcome = await h.execute(stream, work(applyCmd('v_c', 'ours')));
      expect(outcome.result).to.equal(2); // decided on the stale state it would be 1
      // the first decision used the cache (no read); the retry reloads the whole stream
      expect(read.getCalls().map((c) => c.args[1])).to.deep.equal([{ fromRevision: 0 }]);
      expect(append.callCount).to.equal(2);
      expect(await rejectionOf(append.firstCall.returnValue)).to.be.instanceOf(WrongExpectedRevisionError);
      expect(append.secondCall.args[2]).to.deep.equal({ expectedRevision: 1 });
      expect(summary(await store.readStream<VoucherEvent>(stream))).to.deep.equal([
        [0, 'VoucherCreated'],
        [1, 'theirs'],
        [2, 'ours'],
      ]);
    });

    it("the re-decision sees the other writer's use: the last slot is gone", async () => {
      const stream = voucherStream('v_c1');
      const h = handler();
      await h.execute(stream, work(createCmd('v_c1', { max_uses: 1 })));
      const { append } = await interfereBeforeNextAppend(stream, 'v_c1', 'theirs');

      const error = await rejectionOf(h.execute(stream, work(applyCmd('v_c1', 'ours'))));
      expect(error).to.be.instanceOf(DomainError);
      expect(error).to.deep.include({
        code: 'USAGE_LIMIT_EXCEEDED',
        details: { max_uses: 1, current_uses: 1, limit_type: 'total_uses' },
      });
      expect(append.callCount).to.equal(1);
      expect(summary(await store.readStream<VoucherEvent>(stream))).to.deep.equal([
        [0, 'VoucherCreated'],
        [1, 'theirs'],
      ]);
    });
  });

  it('(d) a conflict on every attempt fails with CONCURRENT_MODIFICATION after maxAttempts appends', async () => {
    const stream = voucherStream('v_d');
    const h = handler({ maxAttempts: 3 });
    await h.execute(stream, work(createCmd('v_d')));
    const append = sinon.stub(store, 'appendToStream').rejects(new WrongExpectedRevisionError(stream, 0, 7));
    const read = sinon.spy(store, 'readStream');

    const error = await rejectionOf(h.execute(stream, work(applyCmd('v_d', 'o1'))));
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).code).to.equal('CONCURRENT_MODIFICATION');
    expect(append.callCount).to.equal(3);
    // the first attempt decides on the cache (no read); each retry reloads the whole stream
    expect(read.getCalls().map((c) => c.args[1])).to.deep.equal([{ fromRevision: 0 }, { fromRevision: 0 }]);
  });

  it('(e) an outage rejects with the store error itself, is not retried, and drops the cached state', async () => {
    const stream = voucherStream('v_e');
    const h = handler({ maxAttempts: 5 });
    await h.execute(stream, work(createCmd('v_e')));
    const diskError = new Error('disk I/O error');
    const append = sinon.stub(store, 'appendToStream').rejects(diskError);

    expect(await rejectionOf(h.execute(stream, work(applyCmd('v_e', 'o1'))))).to.equal(diskError);
    expect(append.callCount).to.equal(1);

    // The failed attempt evolved the cached collections in place: the handler must reload, or
    // this retry of the same order would pass for an idempotent repeat and record nothing.
    append.restore();
    const read = sinon.spy(store, 'readStream');
    const outcome = await h.execute(stream, work(applyCmd('v_e', 'o1')));
    expect(outcome.result).to.equal(1);
    expect(read.firstCall.args[1]).to.deep.equal({ fromRevision: 0 });
    expect(summary(await store.readStream<VoucherEvent>(stream))).to.deep.equal([
      [0, 'VoucherCreated'],
      [1, 'o1'],
    ]);
  });

  it('an event that cannot be folded fails the load and drops the half-folded cache', async () => {
    const stream = voucherStream('v_h');
    let failOn: string | undefined;
    const folding = (state: VoucherState, event: VoucherEvent): VoucherState => {
      if (event.type === 'VoucherApplied' && event.data.orderId === failOn) throw new Error('unknown event shape');
      return evolve(state, event);
    };
    const h = new CommandHandler<VoucherCommand, VoucherEvent, VoucherState, AnyEvent>(store, {
      ...voucherDecider,
      evolve: folding,
    });
    await h.execute(stream, work(createCmd('v_h')));
    // another process appends two applications; folding the second one fails once
    const otherStore = SqliteEventStore.open<VoucherEvent | AnyEvent>(path.join(dir, 'events.db'));
    const other = new CommandHandler<VoucherCommand, VoucherEvent, VoucherState, AnyEvent>(otherStore, voucherDecider);
    await other.execute(stream, work(applyCmd('v_h', 'o1')));
    await other.execute(stream, work(applyCmd('v_h', 'o2')));
    await otherStore.close();
    const incremental = sinon.spy(store, 'readStream');
    failOn = 'o2';
    expect(((await rejectionOf(h.execute(stream, work(applyCmd('v_h', 'o3'))))) as Error).message).to.equal(
      'unknown event shape',
    );
    expect(incremental.firstCall.args[1]).to.deep.equal({ fromRevision: 1 }); // it folded o1, then failed on o2
    incremental.restore();
    failOn = undefined;
    // without dropping the cache, the next load would fold o1 again onto the half-updated state
    const read = sinon.spy(store, 'readStream');
    const outcome = await h.execute(stream, work(applyCmd('v_h', 'o3')));
    expect(read.firstCall.args[1]).to.deep.equal({ fromRevision: 0 });
    expect(outcome.result).to.equal(3);
  });

  it('(f) a command of a batch that throws a DomainError does not fail the others', async () => {
    const stream = voucherStream('v_f');
    const h = handler();
    await h.execute(stream, work(createCmd('v_f', { max_uses: 3 })));
    const append = sinon.spy(store, 'appendToStream');
    const settled = await Promise.allSettled([
      h.execute(stream, work(applyCmd('v_f', 'o1'))),
      h.execute(stream, work(applyCmd('v_f', 'o2'))),
      h.execute(stream, work(applyCmd('v_f', 'o2', { requestOrderFingerprint: 'another order' }))),
      h.execute(stream, work(applyCmd('v_f', 'o3'))),
      h.execute(stream, work(applyCmd('v_f', 'o4'))),
    ]);
    expect(
      settled.map((s) => (s.status === 'fulfilled' ? s.value.result : (s.reason as DomainError).code)),
    ).to.deep.equal([1, 2, 'VOUCHER_ALREADY_APPLIED', 3, 'USAGE_LIMIT_EXCEEDED']);
    expect(append.callCount).to.be.at.most(2);
    // o2 and o3 were decided in one batch, around the rejected command, and appended together.
    const withO2 = append
      .getCalls()
      .find((c) => c.args[1].some((e) => e.type === 'VoucherApplied' && e.data.orderId === 'o2'))!;
    expect(withO2.args[1].map((e) => (e.type === 'VoucherApplied' ? e.data.orderId : e.type))).to.include('o3');
    expect(summary(await store.readStream<VoucherEvent>(stream))).to.deep.equal([
      [0, 'VoucherCreated'],
      [1, 'o1'],
      [2, 'o2'],
      [3, 'o3'],
    ]);
  });

  it('idle() resolves once every queued work has run, at once when nothing is queued', async () => {
    const h = handler();
    await h.idle();
    const settled: string[] = [];
    void h.execute(voucherStream('v_i1'), work(createCmd('v_i1'))).then(() => settled.push('v_i1'));
    void h.execute(voucherStream('v_i2'), work(createCmd('v_i2'))).then(() => settled.push('v_i2'));
    void h.execute(voucherStream('v_i1'), work(applyCmd('v_i1', 'o1'))).then(() => settled.push('v_i1/o1'));
    expect(settled).to.deep.equal([]);
    await h.idle();
    await Promise.resolve(); // let the .then callbacks above run
    expect(settled.sort()).to.deep.equal(['v_i1', 'v_i1/o1', 'v_i2']);
    expect(summary(await store.readStream(voucherStream('v_i1')))).to.deep.equal([
      [0, 'VoucherCreated'],
      [1, 'o1'],
    ]);
  });

  it('(g) the cache holds at most cacheSize aggregates, dropping the least recently used', async () => {
    const h = handler({ cacheSize: 2 });
    for (const id of ['a', 'b', 'c']) await h.execute(voucherStream(id), work(createCmd(id)));
    const read = sinon.spy(store, 'readStream');
    const touch = async (id: string, order: string) =>
      (await h.execute(voucherStream(id), work(applyCmd(id, order)))).result;
    // cache after the creates: b, c (a was dropped)
    expect(await touch('b', 'o1')).to.equal(1); // hit  → c, b
    expect(await touch('a', 'o1')).to.equal(1); // miss → b, a (c dropped)
    expect(await touch('c', 'o1')).to.equal(1); // miss → a, c (b dropped)
    expect(await touch('a', 'o2')).to.equal(2); // hit  → c, a
    expect(await touch('b', 'o2')).to.equal(2); // miss
    // hits read nothing (nobody else writes); misses read the whole stream
    expect(read.getCalls().map((c) => [c.args[0], c.args[1]!.fromRevision])).to.deep.equal([
      ['voucher-a', 0],
      ['voucher-c', 0],
      ['voucher-b', 0],
    ]);
  });

  describe('`also`: other streams written in the same atomic append', () => {
    const withAlso = (command: VoucherCommand, side: string, expectedRevision: 'no_stream' | number) => ({
      ...work(command),
      also: (events: VoucherEvent[]) => [
        { streamId: side, events: events.map((e) => ({ type: 'SideNote', data: { of: e.type } })), expectedRevision },
      ],
    });

    it('writes the side streams with the batch; one conflicting side stream fails only its own work', async () => {
      const stream = voucherStream('v_side');
      const h = handler();
      await h.execute(stream, work(createCmd('v_side')));
      await store.appendToStream('side-taken', [{ type: 'Already', data: {} }]);
      const head = await store.headPosition();
      const outcomes = await Promise.allSettled([
        h.execute(stream, withAlso(applyCmd('v_side', 'o1'), 'side-1', 'no_stream')),
        h.execute(stream, withAlso(applyCmd('v_side', 'o2'), 'side-taken', 'no_stream')), // exists: fails
        h.execute(stream, withAlso(applyCmd('v_side', 'o3'), 'side-3', 'no_stream')),
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      const failed = (outcomes[1] as PromiseRejectedResult).reason;
      expect(failed).to.be.instanceOf(WrongExpectedRevisionError).and.include({ streamId: 'side-taken' });
      expect(summary(await store.readStream<VoucherEvent>(stream))).to.deep.equal([
        [0, 'VoucherCreated'],
        [1, 'o1'],
        [2, 'o3'],
      ]);
      const ok = outcomes[0] as PromiseFulfilledResult<{
        position: number;
        also?: Array<{ nextExpectedRevision: number }>;
      }>;
      expect(ok.value.also?.map((r) => r.nextExpectedRevision)).to.deep.equal([0]);
      // the failed work left nothing anywhere; each side stream holds its work's note
      expect((await store.readStream('side-taken')).map((e) => e.type)).to.deep.equal(['Already']);
      expect((await store.readAll({ after: head })).map((e) => e.streamId)).to.deep.equal([
        stream,
        'side-1',
        stream,
        'side-3',
      ]);
      // and the cache is consistent: the next apply is decided on usage 2
      expect((await h.execute(stream, work(applyCmd('v_side', 'o4')))).result).to.equal(3);
    });

    it('a work that decides nothing (a repeat) writes no side stream', async () => {
      const stream = voucherStream('v_rep');
      const h = handler();
      await h.execute(stream, work(createCmd('v_rep')));
      await h.execute(stream, withAlso(applyCmd('v_rep', 'o1'), 'rep-1', 'no_stream'));
      const again = await h.execute(stream, withAlso(applyCmd('v_rep', 'o1'), 'rep-2', 'no_stream'));
      expect(again.also).to.equal(undefined);
      expect(await store.readStream('rep-2')).to.deep.equal([]);
    });
  });

  it("peek and learn: another stream's writes folded into the cache, or the entry dropped when it moved", async () => {
    const stream = voucherStream('v_peek');
    const h = handler();
    await h.execute(stream, work(createCmd('v_peek')));
    const seen = await h.peek(stream);
    expect(seen.revision).to.equal(0);
    const applied = decide(applyCmd('v_peek', 'o1'), seen.state);
    const [result] = await store.appendToStreams([{ streamId: stream, events: applied, expectedRevision: 0 }]);
    h.learn(stream, 0, applied, result!.nextExpectedRevision);
    const read = sinon.spy(store, 'readStream');
    expect((await h.peek(stream)).state!.usageCount).to.equal(1);
    expect(read.callCount).to.equal(0); // learned, not read
    h.learn(stream, 0, applied, 1); // stale: the cache is at 1, not 0
    expect((await h.peek(stream)).state!.usageCount).to.equal(1);
    expect(read.callCount).to.equal(1); // dropped, so read again
  });

  it('peekOrAssumeNew: an unknown stream is taken to be new without a read; learn caches a stream written new', async () => {
    const h = handler();
    const read = sinon.spy(store, 'readStream');
    const stream = voucherStream('v_guess');
    const guessed = await h.peekOrAssumeNew(stream);
    expect(guessed).to.deep.equal({ state: null, revision: -1, assumed: true });
    expect(read.callCount).to.equal(0);
    const created = decide(createCmd('v_guess'), guessed.state);
    const [result] = await store.appendToStreams([
      { streamId: stream, events: created, expectedRevision: 'no_stream' },
    ]);
    h.learn(stream, -1, created, result!.nextExpectedRevision);
    const known = await h.peekOrAssumeNew(stream);
    expect(known.assumed).to.equal(false);
    expect(known.revision).to.equal(0);
    expect(known.state!.code).to.equal('V_GUESS');
    expect(read.callCount).to.equal(0); // learned, not read
    // learn of a non-new stream it never held: nothing cached (it would be half a history)
    h.learn(voucherStream('v_other'), 3, created, 4);
    expect((await h.peekOrAssumeNew(voucherStream('v_other'))).assumed).to.equal(true);
  });

  it('read: on the cached state at once when idle, after the queued works when not, never inside a running batch', async () => {
    const stream = voucherStream('v_read');
    const h = handler();
    await h.execute(stream, work(createCmd('v_read')));
    const read = sinon.spy(store, 'readStream');
    const execute = sinon.spy(h, 'execute');
    expect(await h.read(stream, (state) => state!.usageCount)).to.equal(0);
    expect(read.callCount).to.equal(0); // cached and up to date: no read ...
    expect(execute.callCount).to.equal(0); // ... and no work queued

    // Applies queued but not started have not happened yet: a read now sees the state before them.
    const applies = range(3).map((i) => h.execute(stream, work(applyCmd('v_read', `o${i}`))));
    expect(await h.read(stream, (state) => state!.usageCount)).to.equal(0);
    await Promise.all(applies);

    // While a batch is being written, its events are decided but not yet in the log: a read then
    // waits for the append and sees them only once written.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const written: string[] = [];
    const original = store.appendToStream.bind(store);
    let appending!: () => void;
    const started = new Promise<void>((resolve) => {
      appending = resolve;
    });
    sinon.stub(store, 'appendToStream').callsFake(async (...args) => {
      appending();
      await gate;
      const result = await original(...args);
      written.push('appended');
      return result;
    });
    const more = range(2).map((i) => h.execute(stream, work(applyCmd('v_read', `p${i}`))));
    await started;
    const during = h
      .read(stream, (state) => state!.usageCount)
      .then((count) => {
        written.push(`read answered ${count}`);
        return count;
      });
    release();
    expect(await during).to.equal(5);
    expect(written).to.deep.equal(['appended', 'appended', 'read answered 5']); // p0's batch, then p1's (the read's)
    await Promise.all(more);

    // A view that throws rejects the read (validate's domain errors).
    const failure = new DomainError('VOUCHER_INVALID', 'no', {});
    expect(
      await rejectionOf(
        h.read(stream, () => {
          throw failure;
        }),
      ),
    ).to.equal(failure);
    expect(
      await rejectionOf(
        h.read(voucherStream('v_unknown'), () => {
          throw failure;
        }),
      ),
    ).to.equal(failure);
  });

  it('read: after another connection wrote, reads the new events before the view runs', async () => {
    const stream = voucherStream('v_read2');
    const h = handler();
    await h.execute(stream, work(createCmd('v_read2')));
    const other = SqliteEventStore.open<VoucherEvent | AnyEvent>(path.join(dir, 'events.db'));
    try {
      await new CommandHandler<VoucherCommand, VoucherEvent, VoucherState, AnyEvent>(other, voucherDecider).execute(
        stream,
        work(applyCmd('v_read2', 'elsewhere')),
      );
      await new Promise((resolve) => setImmediate(resolve)); // the change token is read once per turn
      expect(await h.read(stream, (state) => state!.usageCount)).to.equal(1);
    } finally {
      await other.close();
    }
  });
});
