/**
 * Contract every EventStore implementation must pass (SQLite, EventStoreDB, ...).
 *
 * Only port semantics are tested. The store may be shared with other writers (a real server):
 * stream names are unique per test, positions are compared relative to headPosition() taken
 * before the test, and $all reads are filtered to the test's own streams where needed.
 *
 * The factory returns a fresh (or shared) store and a cleanup that closes it.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
} from '../../src/core/eventStore.ts';

export type EventStoreFactory = () => Promise<{ store: EventStore; cleanup: () => Promise<void> }>;

/** What the store under test offers beyond the common port (see EventStore.atomicMultiStream). */
export interface EventStoreCapabilities {
  /** Default true. False: appendToStreams must say so, reject and write nothing. */
  atomicMultiStream?: boolean;
}

const WAIT_LIMIT_MS = 10_000;

export function eventStoreContract(
  name: string,
  factory: EventStoreFactory,
  capabilities: EventStoreCapabilities = {},
): void {
  describe(`EventStore contract: ${name}`, function () {
    let store: EventStore;
    let cleanup: () => Promise<void>;

    beforeEach(async function () {
      ({ store, cleanup } = await factory());
    });

    afterEach(async function () {
      await cleanup();
    });

    /** Appends `count` events to a new stream, returns the stream id. */
    async function seedStream(prefix: string, count: number): Promise<string> {
      const streamId = uniqueStream(prefix);
      await store.appendToStream(streamId, events(count, 'Seeded'), { expectedRevision: 'no_stream' });
      return streamId;
    }

    /** Events of `streams` committed after `after`, in $all order. */
    async function readOwn(after: number, streams: string[]): Promise<RecordedEvent[]> {
      const all = await store.readAll({ after });
      return all.filter((event) => streams.includes(event.streamId));
    }

    async function expectWrongRevision(streamId: string, expected: ExpectedRevision, actual: number): Promise<void> {
      const before = await store.readStream(streamId);
      const head = await store.headPosition();
      const error = await rejectionOf(
        store.appendToStream(streamId, events(2, 'Rejected'), { expectedRevision: expected }),
      );
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      const wrong = error as WrongExpectedRevisionError;
      expect(wrong.streamId).to.equal(streamId);
      expect(wrong.expected).to.equal(expected);
      expect(wrong.actual).to.equal(actual);
      // Nothing of the failed append was written.
      expect(await store.readStream(streamId)).to.deep.equal(before);
      expect(await readOwn(head, [streamId])).to.deep.equal([]);
    }

    describe('appendToStream and readStream', function () {
      it('round-trips type, data, metadata, ids and 0-based revisions', async function () {
        const streamId = uniqueStream('roundtrip');
        const headBefore = await store.headPosition();
        const givenId = randomUUID();
        const data = {
          text: 'héllo ✓',
          n: 12.5,
          flag: true,
          none: null,
          list: [1, 'a', { b: 2 }],
          nested: { deep: { x: -1 } },
        };
        const result = await store.appendToStream(
          streamId,
          [
            { id: givenId, type: 'VoucherCreated', data, metadata: { correlationId: 'c-1', userId: 'u-9' } },
            { type: 'VoucherRedeemed', data: { amount: 5 } },
            { type: 'VoucherExpired', data: {}, metadata: { reason: 'time' } },
          ],
          { expectedRevision: 'no_stream' },
        );

        const stored = await store.readStream(streamId);
        expect(stored.map((e) => e.revision)).to.deep.equal([0, 1, 2]);
        expect(stored.map((e) => e.type)).to.deep.equal(['VoucherCreated', 'VoucherRedeemed', 'VoucherExpired']);
        expect(stored.map((e) => e.streamId)).to.deep.equal([streamId, streamId, streamId]);
        expect(stored[0].data).to.deep.equal(data);
        expect(stored[1].data).to.deep.equal({ amount: 5 });
        expect(stored[2].data).to.deep.equal({});
        expect(stored[0].metadata).to.deep.equal({ correlationId: 'c-1', userId: 'u-9' });
        expect(stored[1].metadata).to.deep.equal({});
        expect(stored[2].metadata).to.deep.equal({ reason: 'time' });
        expect(stored[0].id).to.equal(givenId);
        expect(stored[1].id).to.be.a('string').and.not.equal('');
        expect(new Set(stored.map((e) => e.id)).size).to.equal(3);
        for (const event of stored) {
          expect(Number.isNaN(Date.parse(event.recordedAt)), event.recordedAt).to.equal(false);
          expect(event.position).to.be.greaterThan(headBefore);
        }
        expectStrictlyIncreasing(stored.map((e) => e.position));
        expect(result).to.deep.equal({ nextExpectedRevision: 2, position: stored[2].position });
      });

      it('continues revisions across appends', async function () {
        const streamId = await seedStream('continue', 2);
        const result = await store.appendToStream(streamId, events(2, 'More'), { expectedRevision: 1 });
        expect(result.nextExpectedRevision).to.equal(3);
        const stored = await store.readStream(streamId);
        expect(stored.map((e) => e.revision)).to.deep.equal([0, 1, 2, 3]);
        expect(stored.map((e) => e.data.index)).to.deep.equal([0, 1, 0, 1]);
        expect(result.position).to.equal(stored[3].position);
      });

      it('returns [] for a stream that does not exist', async function () {
        expect(await store.readStream(uniqueStream('missing'))).to.deep.equal([]);
      });

      it('reads only the requested stream', async function () {
        const a = await seedStream('only-a', 2);
        const b = await seedStream('only-b', 3);
        expect((await store.readStream(a)).map((e) => e.streamId)).to.deep.equal([a, a]);
        expect((await store.readStream(b)).map((e) => e.streamId)).to.deep.equal([b, b, b]);
      });

      it('honours fromRevision and maxCount', async function () {
        const streamId = await seedStream('slice', 5);
        const revisions = async (options: { fromRevision?: number; maxCount?: number }) =>
          (await store.readStream(streamId, options)).map((e) => e.revision);
        expect(await revisions({ fromRevision: 2 })).to.deep.equal([2, 3, 4]);
        expect(await revisions({ maxCount: 2 })).to.deep.equal([0, 1]);
        expect(await revisions({ fromRevision: 1, maxCount: 2 })).to.deep.equal([1, 2]);
        expect(await revisions({ fromRevision: 4, maxCount: 10 })).to.deep.equal([4]);
        expect(await revisions({ fromRevision: 5 })).to.deep.equal([]);
      });
    });

    describe('expected revision', function () {
      it("'no_stream' succeeds on a new stream and fails on an existing one", async function () {
        const streamId = uniqueStream('no-stream');
        const result = await store.appendToStream(streamId, events(1, 'First'), { expectedRevision: 'no_stream' });
        expect(result.nextExpectedRevision).to.equal(0);
        await expectWrongRevision(streamId, 'no_stream', 0);
      });

      it('an exact revision succeeds when it matches and fails otherwise', async function () {
        const streamId = await seedStream('exact', 3);
        await expectWrongRevision(streamId, 1, 2);
        await expectWrongRevision(streamId, 3, 2);
        await expectWrongRevision(streamId, 0, 2);
        const result = await store.appendToStream(streamId, events(1, 'Next'), { expectedRevision: 2 });
        expect(result.nextExpectedRevision).to.equal(3);
        expect((await store.readStream(streamId)).length).to.equal(4);
      });

      it('an exact revision fails on a missing stream with actual -1', async function () {
        const streamId = uniqueStream('exact-missing');
        await expectWrongRevision(streamId, 0, -1);
      });

      it("'stream_exists' fails on a missing stream and succeeds on an existing one", async function () {
        const streamId = uniqueStream('exists');
        await expectWrongRevision(streamId, 'stream_exists', -1);
        // The failed append did not create the stream.
        await store.appendToStream(streamId, events(1, 'First'), { expectedRevision: 'no_stream' });
        const result = await store.appendToStream(streamId, events(2, 'More'), { expectedRevision: 'stream_exists' });
        expect(result.nextExpectedRevision).to.equal(2);
      });

      it("'any' succeeds on a missing and on an existing stream", async function () {
        const streamId = uniqueStream('any');
        const first = await store.appendToStream(streamId, events(2, 'A'), { expectedRevision: 'any' });
        expect(first.nextExpectedRevision).to.equal(1);
        const second = await store.appendToStream(streamId, events(1, 'B'), { expectedRevision: 'any' });
        expect(second.nextExpectedRevision).to.equal(2);
        expect(second.position).to.be.greaterThan(first.position);
      });

      it("defaults to 'any' when no expectation is given", async function () {
        const streamId = await seedStream('default', 2);
        const result = await store.appendToStream(streamId, events(1, 'Unchecked'));
        expect(result.nextExpectedRevision).to.equal(2);
      });

      it('a failed append is not partially written', async function () {
        const streamId = await seedStream('atomic', 1);
        const head = await store.headPosition();
        const error = await rejectionOf(store.appendToStream(streamId, events(10, 'Nope'), { expectedRevision: 5 }));
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((await store.readStream(streamId)).map((e) => e.type)).to.deep.equal(['Seeded']);
        expect(await readOwn(head, [streamId])).to.deep.equal([]);
      });
    });

    describe('appendToStreams where the store has no atomic multi-stream append', function () {
      if (capabilities.atomicMultiStream !== false) return;
      it('says so, and rejects without writing to any stream', async function () {
        expect(store.atomicMultiStream).to.equal(false);
        const a = await seedStream('multi-none-a', 1);
        const b = uniqueStream('multi-none-b');
        const head = await store.headPosition();
        const error = await rejectionOf(
          store.appendToStreams([
            { streamId: a, events: events(1, 'A'), expectedRevision: 0 },
            { streamId: b, events: events(1, 'B'), expectedRevision: 'no_stream' },
          ]),
        );
        expect(error).to.be.instanceOf(Error);
        expect(await readOwn(head, [a, b])).to.deep.equal([]);
        expect(await store.readStream(b)).to.deep.equal([]);
      });
    });

    describe('appendToStreams (atomic, several streams)', function () {
      if (capabilities.atomicMultiStream === false) return; // tested above
      it('writes every stream, with one result per stream in the order given, contiguous in $all', async function () {
        const a = await seedStream('multi-a', 2);
        const b = uniqueStream('multi-b');
        const head = await store.headPosition();
        const results = await store.appendToStreams([
          { streamId: a, events: events(1, 'A'), expectedRevision: 1 },
          { streamId: b, events: events(2, 'B'), expectedRevision: 'no_stream' },
        ]);
        expect(results.map((r) => r.nextExpectedRevision)).to.deep.equal([2, 1]);
        const own = await readOwn(head, [a, b]);
        expect(own.map((e) => [e.streamId, e.revision])).to.deep.equal([
          [a, 2],
          [b, 0],
          [b, 1],
        ]);
        expect(results[0]!.position).to.equal(own[0]!.position);
        expect(results[1]!.position).to.equal(own[2]!.position);
      });

      it('one failed expectation writes nothing to any stream and names that stream', async function () {
        const a = await seedStream('multi-a', 1);
        const b = await seedStream('multi-b', 1);
        const head = await store.headPosition();
        const error = await rejectionOf(
          store.appendToStreams([
            { streamId: a, events: events(3, 'A'), expectedRevision: 0 },
            { streamId: b, events: events(1, 'B'), expectedRevision: 'no_stream' },
          ]),
        );
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect(error).to.include({ streamId: b, expected: 'no_stream', actual: 0 });
        expect(await readOwn(head, [a, b])).to.deep.equal([]);
        expect((await store.readStream(a)).map((e) => e.type)).to.deep.equal(['Seeded']);
      });

      it('racing with single-stream appends on one of its streams: exactly one side wins', async function () {
        for (let round = 0; round < 10; round += 1) {
          const shared = await seedStream('multi-shared', 1);
          const other = uniqueStream('multi-other');
          const settled = await Promise.allSettled([
            store.appendToStream(shared, [event('Single')], { expectedRevision: 0 }),
            store.appendToStreams([
              { streamId: other, events: [event('Other')], expectedRevision: 'no_stream' },
              { streamId: shared, events: [event('Multi')], expectedRevision: 0 },
            ]),
          ]);
          expect(settled.filter((x) => x.status === 'fulfilled')).to.have.length(1);
          const sharedTypes = (await store.readStream(shared)).map((e) => e.type);
          const otherTypes = (await store.readStream(other)).map((e) => e.type);
          // the multi-stream append wrote both of its streams or neither
          expect(sharedTypes[1] === 'Multi').to.equal(otherTypes.length === 1);
        }
      });

      it('rejects the same stream twice, and an empty list', async function () {
        const a = uniqueStream('multi-dup');
        expect(
          await rejectionOf(
            store.appendToStreams([
              { streamId: a, events: events(1, 'A') },
              { streamId: a, events: events(1, 'A') },
            ]),
          ),
        ).to.be.instanceOf(TypeError);
        expect(await rejectionOf(store.appendToStreams([]))).to.be.instanceOf(TypeError);
        expect(await store.readStream(a)).to.deep.equal([]);
      });
    });

    describe('global positions and readAll', function () {
      it('positions are strictly increasing across streams in commit order', async function () {
        const headBefore = await store.headPosition();
        const [a, b, c] = [uniqueStream('pos-a'), uniqueStream('pos-b'), uniqueStream('pos-c')];
        const results: AppendResult[] = [];
        for (const streamId of [a, b, a, c, b]) {
          const head = await store.headPosition();
          const result = await store.appendToStream(streamId, events(2, 'P'));
          expect(result.position).to.be.greaterThan(head);
          expect(await store.headPosition()).to.be.at.least(result.position);
          results.push(result);
        }
        expect(results[0].position).to.be.greaterThan(headBefore);
        expectStrictlyIncreasing(results.map((r) => r.position));
      });

      it('readAll returns events in position order, after is exclusive, maxCount limits', async function () {
        const headBefore = await store.headPosition();
        const [a, b] = [uniqueStream('all-a'), uniqueStream('all-b')];
        await store.appendToStream(a, [event('A0')], { expectedRevision: 'no_stream' });
        await store.appendToStream(b, [event('B0'), event('B1')], { expectedRevision: 'no_stream' });
        await store.appendToStream(a, [event('A1')], { expectedRevision: 0 });

        const own = await readOwn(headBefore, [a, b]);
        expect(own.map((e) => e.type)).to.deep.equal(['A0', 'B0', 'B1', 'A1']);
        expect(own.map((e) => `${e.streamId === a ? 'a' : 'b'}${e.revision}`)).to.deep.equal(['a0', 'b0', 'b1', 'a1']);
        expectStrictlyIncreasing(own.map((e) => e.position));
        // Same events, same positions and ids as readStream.
        const byStream = [...(await store.readStream(a)), ...(await store.readStream(b))];
        for (const e of own) {
          expect(
            byStream.find((s) => s.id === e.id),
            e.type,
          ).to.deep.equal(e);
        }

        const afterSecond = await readOwn(own[1].position, [a, b]);
        expect(afterSecond.map((e) => e.type)).to.deep.equal(['B1', 'A1']);

        const limited = await store.readAll({ after: headBefore, maxCount: 2 });
        const unlimited = await store.readAll({ after: headBefore });
        expect(limited).to.have.length(2);
        expect(limited).to.deep.equal(unlimited.slice(0, 2));
        expect(await store.readAll({ after: headBefore, maxCount: 0 })).to.deep.equal([]);
        expect(await store.readAll({ after: await store.headPosition() })).to.deep.equal([]);
      });

      it('readAll without after starts from the beginning', async function () {
        await seedStream('from-start', 1);
        const [first] = await store.readAll({ maxCount: 1 });
        expect(first.position).to.be.greaterThan(0);
        expect(await store.readAll({ after: 0, maxCount: 1 })).to.deep.equal([first]);
      });
    });

    describe('concurrency', function () {
      it('50 concurrent appends with the same expected revision: exactly one succeeds', async function () {
        const streamId = await seedStream('race', 1);
        const attempts = Array.from({ length: 50 }, (_, i) =>
          store.appendToStream(streamId, [event('Raced', { attempt: i })], { expectedRevision: 0 }),
        );
        const settled = await Promise.allSettled(attempts);
        const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [{ i, result: s.value }] : []));
        const lost = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
        expect(won).to.have.length(1);
        expect(won[0].result.nextExpectedRevision).to.equal(1);
        expect(lost).to.have.length(49);
        for (const reason of lost) {
          expect(reason).to.be.instanceOf(WrongExpectedRevisionError);
          expect((reason as WrongExpectedRevisionError).actual).to.equal(1);
        }
        const stored = await store.readStream(streamId);
        expect(stored.map((e) => e.revision)).to.deep.equal([0, 1]);
        expect(stored[1].data).to.deep.equal({ attempt: won[0].i });
      });

      it("50 concurrent 'no_stream' appends to one new stream: exactly one succeeds", async function () {
        const streamId = uniqueStream('race-new');
        const settled = await Promise.allSettled(
          Array.from({ length: 50 }, (_, i) =>
            store.appendToStream(streamId, [event('Created', { attempt: i })], { expectedRevision: 'no_stream' }),
          ),
        );
        expect(settled.filter((s) => s.status === 'fulfilled')).to.have.length(1);
        const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
        expect(rejected.every((s) => s.reason instanceof WrongExpectedRevisionError)).to.equal(true);
        expect(await store.readStream(streamId)).to.have.length(1);
      });

      it('concurrent appends to different streams all succeed', async function () {
        const headBefore = await store.headPosition();
        const streams = Array.from({ length: 50 }, (_, i) => uniqueStream(`parallel-${i}`));
        const results = await Promise.all(
          streams.map((streamId, i) =>
            store.appendToStream(streamId, [event('Parallel', { i }), event('Parallel2', { i })], {
              expectedRevision: 'no_stream',
            }),
          ),
        );
        expect(results.map((r) => r.nextExpectedRevision)).to.deep.equal(streams.map(() => 1));
        expect(new Set(results.map((r) => r.position)).size).to.equal(50);
        for (const [i, streamId] of streams.entries()) {
          const stored = await store.readStream(streamId);
          expect(stored.map((e) => e.data)).to.deep.equal([{ i }, { i }]);
          expect(stored[1].position).to.equal(results[i].position);
        }
        expect(await readOwn(headBefore, streams)).to.have.length(100);
      });

      it("concurrent 'any' appends to one stream keep each append's events contiguous", async function () {
        const streamId = uniqueStream('any-race');
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.appendToStream(
              streamId,
              [0, 1, 2].map((k) => event('Chunk', { append: i, k })),
              { expectedRevision: 'any' },
            ),
          ),
        );
        expect(results.map((r) => r.nextExpectedRevision).sort((x, y) => x - y)).to.deep.equal(
          Array.from({ length: 20 }, (_, i) => i * 3 + 2),
        );
        const stored = await store.readStream(streamId);
        expect(stored.map((e) => e.revision)).to.deep.equal(Array.from({ length: 60 }, (_, i) => i));
        for (let start = 0; start < 60; start += 3) {
          const chunk = stored.slice(start, start + 3).map((e) => e.data);
          expect(chunk.map((d) => d.k)).to.deep.equal([0, 1, 2]);
          expect(new Set(chunk.map((d) => d.append)).size).to.equal(1);
        }
      });
    });

    describe('subscribeToAll', function () {
      it('delivers historical then live events in order, without gaps or duplicates', async function () {
        const headBefore = await store.headPosition();
        const [a, b] = [uniqueStream('sub-a'), uniqueStream('sub-b')];
        await store.appendToStream(a, events(5, 'History'), { expectedRevision: 'no_stream' });

        const received: RecordedEvent[] = [];
        const batchSizes: number[] = [];
        let running = 0;
        let overlapped = false;
        const subscription = store.subscribeToAll({ after: headBefore, maxBatchSize: 2 }, async (batch) => {
          if (running++ > 0) overlapped = true;
          batchSizes.push(batch.length);
          received.push(...batch);
          await sleep(1);
          running -= 1;
        });
        try {
          await waitFor(() => ownOf(received, [a]).length === 5, 'historical events');
          await store.appendToStream(a, events(3, 'Live'), { expectedRevision: 4 });
          await Promise.all([
            store.appendToStream(b, events(2, 'LiveB'), { expectedRevision: 'no_stream' }),
            store.appendToStream(a, events(2, 'LiveA'), { expectedRevision: 7 }),
          ]);
          await waitFor(() => ownOf(received, [a, b]).length === 12, 'live events');
        } finally {
          await subscription.close();
        }
        expect(overlapped, 'handler called while another call was running').to.equal(false);
        expect(
          batchSizes.every((n) => n >= 1 && n <= 2),
          `batch sizes ${batchSizes}`,
        ).to.equal(true);
        expect(received[0].position).to.be.greaterThan(headBefore);
        expectStrictlyIncreasing(received.map((e) => e.position));
        const expected = await readOwn(headBefore, [a, b]);
        expect(ownOf(received, [a, b])).to.deep.equal(expected);
        const types = expected.map((e) => e.type);
        expect(types.slice(0, 8)).to.deep.equal([...Array(5).fill('History'), ...Array(3).fill('Live')]);
        // The two concurrent appends may commit in either order, but each one contiguously.
        expect([types.slice(8).join(), types.slice(8).reverse().join()]).to.include('LiveA,LiveA,LiveB,LiveB');
      });

      it('resumes after a checkpoint', async function () {
        const streamId = uniqueStream('resume');
        const result = await store.appendToStream(streamId, events(1, 'Before'), { expectedRevision: 'no_stream' });
        await store.appendToStream(streamId, [event('After1'), event('After2')], { expectedRevision: 0 });
        const received: RecordedEvent[] = [];
        const subscription = store.subscribeToAll({ after: result.position }, (batch) => {
          received.push(...batch);
        });
        try {
          await waitFor(() => ownOf(received, [streamId]).length >= 2, 'events after the checkpoint');
        } finally {
          await subscription.close();
        }
        expect(received.every((e) => e.position > result.position)).to.equal(true);
        expect(ownOf(received, [streamId]).map((e) => e.type)).to.deep.equal(['After1', 'After2']);
      });

      it('close() stops delivery', async function () {
        const headBefore = await store.headPosition();
        const streamId = await seedStream('close', 1);
        const received: RecordedEvent[] = [];
        const subscription = store.subscribeToAll({ after: headBefore }, (batch) => {
          received.push(...batch);
        });
        await waitFor(() => ownOf(received, [streamId]).length === 1, 'first event');
        await subscription.close();
        await store.appendToStream(streamId, events(2, 'AfterClose'), { expectedRevision: 0 });
        await sleep(500); // longer than any reasonable poll interval
        expect(ownOf(received, [streamId]).map((e) => e.type)).to.deep.equal(['Seeded']);
      });

      it('close() resolves only once the running handler call has finished', async function () {
        const headBefore = await store.headPosition();
        await seedStream('close-wait', 1);
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        let started = false;
        let finished = false;
        const subscription = store.subscribeToAll({ after: headBefore }, async () => {
          started = true;
          await released;
          finished = true;
        });
        await waitFor(() => started, 'handler call');
        let closed = false;
        const closing = subscription.close().then(() => {
          closed = true;
        });
        await sleep(20);
        expect(closed, 'close() resolved while the handler was running').to.equal(false);
        release();
        await closing;
        expect(finished).to.equal(true);
      });

      it('stops and reports the error when the handler throws', async function () {
        const headBefore = await store.headPosition();
        const streamId = await seedStream('throws', 1);
        const failure = new Error('projection failed');
        const errors: unknown[] = [];
        let calls = 0;
        const subscription = store.subscribeToAll({ after: headBefore, onError: (error) => errors.push(error) }, () => {
          calls += 1;
          throw failure;
        });
        try {
          await waitFor(() => errors.length > 0, 'onError');
          await store.appendToStream(streamId, events(1, 'Later'), { expectedRevision: 0 });
          await sleep(300);
        } finally {
          await subscription.close();
        }
        expect(errors).to.deep.equal([failure]);
        expect(calls).to.equal(1);
      });
    });
  });
}

function uniqueStream(prefix: string): string {
  return `contract_${prefix}-${randomUUID().replaceAll('-', '')}`;
}

function event(type: string, data: Record<string, unknown> = {}): NewEvent {
  return { type, data };
}

function events(count: number, type: string): NewEvent[] {
  return Array.from({ length: count }, (_, index) => event(type, { index }));
}

function ownOf(events: RecordedEvent[], streams: string[]): RecordedEvent[] {
  return events.filter((e) => streams.includes(e.streamId));
}

function expectStrictlyIncreasing(values: number[]): void {
  for (let i = 1; i < values.length; i += 1) {
    expect(values[i], `value #${i} of ${values.join(',')}`).to.be.greaterThan(values[i - 1]);
  }
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `condition` until it holds; fails after WAIT_LIMIT_MS (a deadline, not a timing assertion). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
