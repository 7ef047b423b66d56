/**
 * The EventStoreDB adapter at the client boundary: each call it makes on `@eventstore/db-client`
 * and its arguments, what it makes of the answers, and the mapping of every error the client
 * raises. The client is a sinon fake; errors are the client's own classes, built as the client
 * builds them from a gRPC status (convertToCommandError) where they carry server metadata.
 */
import { PassThrough, Readable } from 'node:stream';
import { expect } from 'chai';
import sinon from 'sinon';
import { Metadata, status } from '@grpc/grpc-js';
import {
  ANY,
  BACKWARDS,
  END,
  ErrorType,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  AccessDeniedError,
  CancelledError,
  DeadlineExceededError,
  MaxAppendSizeExceededError,
  StreamDeletedError,
  StreamNotFoundError,
  TimeoutError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
  convertToCommandError,
  type AllStreamResolvedEvent,
} from '@eventstore/db-client';
import type { DomainEvent } from '../../src/core/decider.ts';
import { WrongExpectedRevisionError, type RecordedEvent } from '../../src/core/eventStore.ts';
import { StoreUnavailableError } from '../../src/core/storeUnavailable.ts';
import {
  EsdbEventStore,
  openEsdbEventStore,
  redact,
  toPosition,
  type EsdbClient,
} from '../../src/infrastructure/eventStore/esdbEventStore.ts';

interface FakeClient {
  appendToStream: sinon.SinonStub;
  readStream: sinon.SinonStub;
  readAll: sinon.SinonStub;
  subscribeToAll: sinon.SinonStub;
  dispose: sinon.SinonStub;
}

const fakeClient = (): FakeClient => ({
  appendToStream: sinon.stub(),
  readStream: sinon.stub(),
  readAll: sinon.stub(),
  subscribeToAll: sinon.stub(),
  dispose: sinon.stub().resolves(),
});

const open = (client: FakeClient, options: { pageSize?: number; ownsClient?: boolean } = {}) =>
  new EsdbEventStore(client as unknown as EsdbClient, { namespace: 'sandbox', ...options });

const CREATED = new Date('2026-03-01T10:00:00.000Z');

/** A resolved event as the client hands it out (JSON, with its log position). */
function resolved(
  streamId: string,
  revision: number,
  position: number,
  fields: { type?: string; data?: unknown; metadata?: unknown; id?: string } = {},
): AllStreamResolvedEvent {
  return {
    event: {
      streamId,
      id: fields.id ?? `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`,
      revision: BigInt(revision),
      type: fields.type ?? 'VoucherCreated',
      data: (fields.data ?? { n: position }) as Record<string, unknown>,
      metadata: fields.metadata as Record<string, unknown>,
      isJson: true,
      created: CREATED,
      position: { commit: BigInt(position), prepare: BigInt(position) },
    },
    commitPosition: BigInt(position),
  } as AllStreamResolvedEvent;
}

/** A read as the client returns it: a readable stream of events, failing with `error` at the end. */
function reading(events: AllStreamResolvedEvent[], error?: Error): Readable {
  return Readable.from(
    (async function* () {
      yield* events;
      if (error) throw error;
    })(),
  );
}

/** An error as the client makes it from a gRPC failure carrying the server's `exception` metadata. */
function fromGrpc(code: status, exception?: string, extra: Record<string, string> = {}): Error {
  const metadata = new Metadata();
  if (exception) metadata.set('exception', exception);
  for (const [key, value] of Object.entries(extra)) metadata.set(key, value);
  const serviceError = Object.assign(new Error(`${code} ${exception ?? ''}`), { code, details: 'x', metadata });
  return convertToCommandError(serviceError);
}

/** Every error class the client raises for these calls, and whether the server is just not there. */
const CLIENT_ERRORS: Array<{ name: string; make: () => Error; transient: boolean }> = [
  { name: 'UnavailableError', make: () => fromGrpc(status.UNAVAILABLE), transient: true },
  { name: 'DeadlineExceededError', make: () => fromGrpc(status.DEADLINE_EXCEEDED), transient: true },
  { name: 'TimeoutError', make: () => new TimeoutError(undefined, 'timed out'), transient: true },
  {
    name: 'NotLeaderError',
    make: () =>
      fromGrpc(status.NOT_FOUND, ErrorType.NOT_LEADER, { 'leader-endpoint-host': 'h', 'leader-endpoint-port': '2113' }),
    transient: true,
  },
  { name: 'CancelledError', make: () => fromGrpc(status.CANCELLED), transient: true },
  {
    // Appends on a channel that never connected reject with gRPC's own error, unconverted.
    name: 'Error',
    make: () =>
      Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
        code: status.UNAVAILABLE,
        details: 'x',
        metadata: new Metadata(),
      }),
    transient: true,
  },
  {
    name: 'AccessDeniedError',
    make: () => fromGrpc(status.PERMISSION_DENIED, ErrorType.ACCESS_DENIED),
    transient: false,
  },
  { name: 'StreamDeletedError', make: () => StreamDeletedError.fromStreamName('sandbox.s'), transient: false },
  {
    name: 'MaxAppendSizeExceededError',
    make: () =>
      fromGrpc(status.INVALID_ARGUMENT, ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED, { 'maximum-append-size': '10' }),
    transient: false,
  },
  { name: 'UnknownError', make: () => fromGrpc(status.UNKNOWN), transient: false },
];

describe('EsdbEventStore (EventStoreDB adapter, client faked)', function () {
  afterEach(() => sinon.restore());

  it('the client errors used here are the classes the client raises', function () {
    const made = CLIENT_ERRORS.map(({ make }) => make().constructor.name);
    expect(made).to.deep.equal(CLIENT_ERRORS.map(({ name }) => name));
    expect(fromGrpc(status.UNAVAILABLE)).to.be.instanceOf(UnavailableError);
    expect(fromGrpc(status.DEADLINE_EXCEEDED)).to.be.instanceOf(DeadlineExceededError);
    expect(fromGrpc(status.CANCELLED)).to.be.instanceOf(CancelledError);
    expect(fromGrpc(status.PERMISSION_DENIED, ErrorType.ACCESS_DENIED)).to.be.instanceOf(AccessDeniedError);
    expect(fromGrpc(status.UNKNOWN)).to.be.instanceOf(UnknownError);
    expect(
      fromGrpc(status.INVALID_ARGUMENT, ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED, { 'maximum-append-size': '10' }),
    ).to.be.instanceOf(MaxAppendSizeExceededError);
  });

  describe('appendToStream', function () {
    it("writes JSON events to the namespace's stream with the given ids and metadata", async function () {
      const client = fakeClient();
      client.appendToStream.resolves({
        success: true,
        nextExpectedRevision: 4n,
        position: { commit: 9_000n, prepare: 9_000n },
      });
      const store = open(client);
      const result = await store.appendToStream(
        'voucher-1',
        [
          {
            id: '7b0c9a2e-2f6e-4c1b-9d3e-0a1b2c3d4e5f',
            type: 'VoucherCreated',
            data: { code: 'A' },
            metadata: { m: 1 },
          },
          { type: 'VoucherRedeemed', data: { amount: 5 } },
        ],
        { expectedRevision: 2 },
      );
      expect(result).to.deep.equal({ nextExpectedRevision: 4, position: 9_000 });
      sinon.assert.calledOnce(client.appendToStream);
      const [streamName, events, options] = client.appendToStream.firstCall.args as [
        string,
        Array<Record<string, unknown>>,
        Record<string, unknown>,
      ];
      expect(streamName).to.equal('sandbox.voucher-1');
      expect(options).to.deep.equal({ expectedRevision: 2n });
      expect(events.map(({ id: _, ...rest }) => rest)).to.deep.equal([
        { contentType: 'application/json', type: 'VoucherCreated', data: { code: 'A' }, metadata: { m: 1 } },
        { contentType: 'application/json', type: 'VoucherRedeemed', data: { amount: 5 }, metadata: {} },
      ]);
      expect(events[0]!.id).to.equal('7b0c9a2e-2f6e-4c1b-9d3e-0a1b2c3d4e5f');
      expect(events[1]!.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    });

    it('maps each expected revision to the client constant, any by default', async function () {
      const client = fakeClient();
      client.appendToStream.resolves({
        success: true,
        nextExpectedRevision: 0n,
        position: { commit: 1n, prepare: 1n },
      });
      const store = open(client);
      const event = { type: 'E', data: {} };
      await store.appendToStream('s', [event]);
      await store.appendToStream('s', [event], { expectedRevision: 'any' });
      await store.appendToStream('s', [event], { expectedRevision: 'no_stream' });
      await store.appendToStream('s', [event], { expectedRevision: 'stream_exists' });
      await store.appendToStream('s', [event], { expectedRevision: 0 });
      await store.appendToStream('s', [event], { expectedRevision: 41 });
      expect(client.appendToStream.getCalls().map((call) => call.args[2].expectedRevision)).to.deep.equal([
        ANY,
        ANY,
        NO_STREAM,
        STREAM_EXISTS,
        0n,
        41n,
      ]);
    });

    it('refuses an invalid expected revision without calling the server', async function () {
      const client = fakeClient();
      const store = open(client);
      for (const bad of [-1, 1.5, 'latest']) {
        const error = await store
          .appendToStream('s', [{ type: 'E', data: {} }], { expectedRevision: bad as never })
          .catch((e: unknown) => e);
        expect(error, String(bad)).to.be.instanceOf(TypeError);
      }
      sinon.assert.notCalled(client.appendToStream);
    });

    it("maps WrongExpectedVersionError to the port's conflict: the actual revision, -1 for no stream", async function () {
      const client = fakeClient();
      client.appendToStream
        .onFirstCall()
        .rejects(new WrongExpectedVersionError(undefined, { streamName: 'sandbox.s', expected: 1n, current: 3n }));
      client.appendToStream.onSecondCall().rejects(
        new WrongExpectedVersionError(undefined, {
          streamName: 'sandbox.s',
          expected: STREAM_EXISTS,
          current: NO_STREAM,
        }),
      );
      const store = open(client);
      const first = await store
        .appendToStream('s', [{ type: 'E', data: {} }], { expectedRevision: 1 })
        .catch((e: unknown) => e);
      expect(first).to.be.instanceOf(WrongExpectedRevisionError).and.include({ streamId: 's', expected: 1, actual: 3 });
      const second = await store
        .appendToStream('s', [{ type: 'E', data: {} }], { expectedRevision: 'stream_exists' })
        .catch((e: unknown) => e);
      expect(second)
        .to.be.instanceOf(WrongExpectedRevisionError)
        .and.include({ streamId: 's', expected: 'stream_exists', actual: -1 });
    });

    for (const { name, make, transient } of CLIENT_ERRORS) {
      it(`${name} from the server: ${transient ? 'StoreUnavailableError' : 'passed on as it is'}`, async function () {
        const client = fakeClient();
        const raised = make();
        client.appendToStream.rejects(raised);
        const error = await open(client)
          .appendToStream('s', [{ type: 'E', data: {} }])
          .catch((e: unknown) => e);
        if (transient) {
          expect(error).to.be.instanceOf(StoreUnavailableError).and.include({ store: 'eventstore' });
          const cause = (error as Error).cause as { _raw?: unknown };
          expect(cause === raised || cause._raw === raised, 'the client error is the cause').to.equal(true);
        } else {
          expect(error).to.equal(raised);
        }
      });
    }

    it('a call that failed on a lost server leaves the store usable: the next one goes to the server', async function () {
      const client = fakeClient();
      client.appendToStream
        .onFirstCall()
        .rejects(fromGrpc(status.UNAVAILABLE))
        .onSecondCall()
        .resolves({ success: true, nextExpectedRevision: 0n, position: { commit: 77n, prepare: 77n } });
      const store = open(client);
      const event = { type: 'E', data: {} };
      const first = await store
        .appendToStream('s', [event], { expectedRevision: 'no_stream' })
        .catch((e: unknown) => e);
      expect(first).to.be.instanceOf(StoreUnavailableError);
      expect(await store.appendToStream('s', [event], { expectedRevision: 'no_stream' })).to.deep.equal({
        nextExpectedRevision: 0,
        position: 77,
      });
    });

    it('takes the position from the appended event when the server reports none', async function () {
      const client = fakeClient();
      client.appendToStream.resolves({ success: true, nextExpectedRevision: 1n });
      client.readStream.returns(reading([resolved('sandbox.s', 1, 700)]));
      expect(await open(client).appendToStream('s', [{ type: 'E', data: {} }])).to.deep.equal({
        nextExpectedRevision: 1,
        position: 700,
      });
      expect(client.readStream.firstCall.args.slice(0, 2)).to.deep.equal([
        'sandbox.s',
        { fromRevision: 1n, direction: FORWARDS, maxCount: 1 },
      ]);
    });

    it('an empty append checks the expectation against the last revision and writes nothing', async function () {
      const client = fakeClient();
      client.readStream.callsFake(() => reading([resolved('sandbox.s', 2, 500)]));
      client.readAll.callsFake(() => reading([resolved('sandbox.s', 2, 500)]));
      const store = open(client);
      expect(await store.appendToStream('s', [], { expectedRevision: 2 })).to.deep.equal({
        nextExpectedRevision: 2,
        position: 500,
      });
      const error = await store.appendToStream('s', [], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(WrongExpectedRevisionError).and.include({ actual: 2 });
      expect(client.readStream.firstCall.args.slice(0, 2)).to.deep.equal([
        'sandbox.s',
        { fromRevision: END, direction: BACKWARDS, maxCount: 1 },
      ]);
      sinon.assert.notCalled(client.appendToStream);
    });
  });

  describe('appendToStreams', function () {
    it('says the store has no atomic multi-stream append and rejects without calling the server', async function () {
      const client = fakeClient();
      const store = open(client);
      expect(store.atomicMultiStream).to.equal(false);
      const error = await store
        .appendToStreams([
          { streamId: 'a', events: [{ type: 'E', data: {} }] },
          { streamId: 'b', events: [{ type: 'E', data: {} }] },
        ])
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(Error).and.not.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(/no atomic append to several streams/);
      expect(await store.appendToStreams([]).catch((e: unknown) => e)).to.be.instanceOf(TypeError);
      sinon.assert.notCalled(client.appendToStream);
    });
  });

  describe('readStream', function () {
    it("reads the namespace's stream and returns port events", async function () {
      const client = fakeClient();
      client.readStream.returns(
        reading([
          resolved('sandbox.voucher-1', 2, 300, { type: 'VoucherCreated', data: { code: 'A' }, metadata: { m: 1 } }),
          resolved('sandbox.voucher-1', 3, 420, { type: 'VoucherRedeemed', data: { amount: 5 } }),
        ]),
      );
      const events = await open(client).readStream('voucher-1', { fromRevision: 2, maxCount: 10 });
      expect(client.readStream.firstCall.args.slice(0, 2)).to.deep.equal([
        'sandbox.voucher-1',
        { fromRevision: 2n, direction: FORWARDS, maxCount: 10 },
      ]);
      expect(events).to.deep.equal([
        {
          type: 'VoucherCreated',
          data: { code: 'A' },
          id: '00000000-0000-4000-8000-000000000300',
          streamId: 'voucher-1',
          metadata: { m: 1 },
          revision: 2,
          position: 300,
          recordedAt: '2026-03-01T10:00:00.000Z',
        },
        {
          type: 'VoucherRedeemed',
          data: { amount: 5 },
          id: '00000000-0000-4000-8000-000000000420',
          streamId: 'voucher-1',
          metadata: {},
          revision: 3,
          position: 420,
          recordedAt: '2026-03-01T10:00:00.000Z',
        },
      ]);
    });

    it('reads from revision 0 without a count by default; maxCount 0 reads nothing', async function () {
      const client = fakeClient();
      client.readStream.returns(reading([]));
      const store = open(client);
      await store.readStream('s');
      expect(client.readStream.firstCall.args[1]).to.deep.equal({ fromRevision: 0n, direction: FORWARDS });
      expect(await store.readStream('s', { maxCount: 0 })).to.deep.equal([]);
      sinon.assert.calledOnce(client.readStream);
    });

    it('returns [] when the stream does not exist (StreamNotFoundError)', async function () {
      const client = fakeClient();
      client.readStream.returns(reading([], new StreamNotFoundError(undefined, 'sandbox.missing')));
      expect(await open(client).readStream('missing')).to.deep.equal([]);
    });

    for (const { name, make, transient } of CLIENT_ERRORS) {
      it(`${name} while reading: ${transient ? 'StoreUnavailableError' : 'passed on as it is'}`, async function () {
        const client = fakeClient();
        const raised = make();
        client.readStream.returns(reading([resolved('sandbox.s', 0, 1)], raised));
        const error = await open(client)
          .readStream('s')
          .catch((e: unknown) => e);
        if (transient) expect(error).to.be.instanceOf(StoreUnavailableError).and.include({ store: 'eventstore' });
        else expect(error).to.equal(raised);
      });
    }

    it('applies the upcaster to every event read', async function () {
      const client = fakeClient();
      client.readStream.returns(reading([resolved('sandbox.s', 0, 10, { type: 'Old', data: { v: 1 } })]));
      const store = new EsdbEventStore<DomainEvent>(client as unknown as EsdbClient, {
        namespace: 'sandbox',
        upcast: (stored) => ({ ...stored, type: 'New', data: { v: 2 } }),
      });
      const [event] = await store.readStream('s');
      expect([event!.type, event!.data]).to.deep.equal(['New', { v: 2 }]);
    });

    it('refuses an event without a log position (a server older than 22.6)', async function () {
      const client = fakeClient();
      const old = resolved('sandbox.s', 0, 10);
      delete (old.event as { position?: unknown }).position;
      client.readStream.returns(reading([old]));
      const error = await open(client)
        .readStream('s')
        .catch((e: unknown) => e);
      expect((error as Error).message).to.match(/22\.6 or later/);
    });
  });

  describe('readAll and headPosition', function () {
    it("scans $all page by page, keeping the namespace's events after `after`", async function () {
      const client = fakeClient();
      client.readAll
        .onFirstCall()
        .returns(
          reading([
            resolved('sandbox.a', 0, 100), // the event at `after` itself: a read starts with it
            resolved('production.a', 0, 110),
            resolved('$statistics-127.0.0.1:2113', 5, 120),
          ]),
        )
        .onSecondCall()
        .returns(reading([resolved('$statistics-127.0.0.1:2113', 5, 120), resolved('sandbox.b', 0, 130)]));
      const events = await open(client, { pageSize: 3 }).readAll({ after: 100 });
      expect(events.map((e) => [e.streamId, e.position])).to.deep.equal([['b', 130]]);
      expect(client.readAll.getCalls().map((call) => call.args[0])).to.deep.equal([
        { fromPosition: { commit: 100n, prepare: 100n }, direction: FORWARDS, maxCount: 3 },
        { fromPosition: { commit: 120n, prepare: 120n }, direction: FORWARDS, maxCount: 3 },
      ]);
    });

    it('starts from START without `after`, stops at maxCount', async function () {
      const client = fakeClient();
      client.readAll.returns(reading([1, 2, 3, 4].map((p) => resolved('sandbox.a', p - 1, p))));
      const store = open(client, { pageSize: 4 });
      expect((await store.readAll({ maxCount: 2 })).map((e) => e.position)).to.deep.equal([1, 2]);
      expect(client.readAll.firstCall.args[0]).to.deep.include({ fromPosition: START });
      expect(await store.readAll({ maxCount: 0 })).to.deep.equal([]);
      sinon.assert.calledOnce(client.readAll);
    });

    it("headPosition: the namespace's last event, read backwards from the end; 0 when it has none", async function () {
      const client = fakeClient();
      client.readAll
        .onFirstCall()
        .returns(reading([resolved('production.x', 3, 900), resolved('$stats', 1, 880)]))
        .onSecondCall()
        .returns(reading([resolved('$stats', 1, 880), resolved('sandbox.y', 7, 850)]));
      expect(await open(client, { pageSize: 2 }).headPosition()).to.equal(850);
      expect(client.readAll.getCalls().map((call) => call.args[0])).to.deep.equal([
        { fromPosition: END, direction: BACKWARDS, maxCount: 2 },
        { fromPosition: { commit: 880n, prepare: 880n }, direction: BACKWARDS, maxCount: 2 },
      ]);

      const empty = fakeClient();
      empty.readAll
        .onFirstCall()
        .returns(reading([resolved('production.x', 1, 20), resolved('production.x', 0, 10)]))
        .onSecondCall()
        .returns(reading([resolved('production.x', 0, 10)]));
      expect(await open(empty, { pageSize: 2 }).headPosition()).to.equal(0);
      sinon.assert.calledTwice(empty.readAll);
    });

    it('headPosition reads back only to where its previous call looked', async function () {
      const client = fakeClient();
      client.readAll
        .onCall(0)
        .returns(reading([resolved('production.x', 3, 900), resolved('sandbox.y', 7, 850)]))
        .onCall(1)
        .returns(reading([resolved('production.x', 5, 990), resolved('production.x', 4, 950)]))
        .onCall(2)
        .returns(reading([resolved('production.x', 3, 900), resolved('production.x', 2, 880)]))
        .onCall(3)
        .returns(reading([resolved('sandbox.z', 0, 1_000), resolved('production.x', 5, 990)]));
      const store = open(client, { pageSize: 2 });
      expect(await store.headPosition()).to.equal(850);
      // Other namespaces wrote 950 and 990: the scan stops at 900, below which the head is known.
      expect(await store.headPosition()).to.equal(850);
      expect(client.readAll.callCount).to.equal(3);
      expect(client.readAll.getCall(2).args[0].fromPosition).to.deep.equal({ commit: 950n, prepare: 950n });
      expect(await store.headPosition()).to.equal(1_000);
    });

    it('an unreachable server while scanning is StoreUnavailableError', async function () {
      const client = fakeClient();
      client.readAll.returns(reading([], fromGrpc(status.UNAVAILABLE)));
      const error = await open(client)
        .headPosition()
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(StoreUnavailableError);
    });
  });

  describe('subscribeToAll', function () {
    /** A subscription as the client returns it: a readable of resolved events with unsubscribe(). */
    function subscriptionSource() {
      const source = Object.assign(new PassThrough({ objectMode: true }), {
        unsubscribe: sinon.stub().callsFake(async () => {
          source.end();
        }),
      });
      return source;
    }

    async function until(condition: () => boolean): Promise<void> {
      for (let i = 0; i < 500 && !condition(); i += 1) await new Promise((r) => setTimeout(r, 2));
      expect(condition(), 'condition reached').to.equal(true);
    }

    it('subscribes from the checkpoint with a server-side prefix filter on the namespace', async function () {
      const client = fakeClient();
      client.subscribeToAll.returns(subscriptionSource());
      const store = open(client);
      await store.subscribeToAll({ after: 4_200 }, () => {}).close();
      await store.subscribeToAll({}, () => {}).close();
      const [fromCheckpoint, fromStart] = client.subscribeToAll.getCalls().map((call) => call.args[0]);
      expect(fromCheckpoint.fromPosition).to.deep.equal({ commit: 4_200n, prepare: 4_200n });
      expect(fromCheckpoint.filter).to.deep.include({ filterOn: 'streamName', prefixes: ['sandbox.'] });
      expect(fromStart.fromPosition).to.equal(START);
    });

    it('delivers batches of at most maxBatchSize, one handler call at a time, nothing at or before the checkpoint', async function () {
      const client = fakeClient();
      const source = subscriptionSource();
      client.subscribeToAll.returns(source);
      const batches: RecordedEvent[][] = [];
      let running = 0;
      let overlapped = false;
      const subscription = open(client).subscribeToAll({ after: 10, maxBatchSize: 2 }, async (batch) => {
        if (running++ > 0) overlapped = true;
        batches.push(batch);
        await new Promise((r) => setTimeout(r, 5));
        running -= 1;
      });
      for (const p of [10, 20, 30, 40]) source.write(resolved('sandbox.s', p / 10, p));
      source.write(resolved('production.s', 0, 45)); // a filter the server would apply, checked again
      source.write(resolved('sandbox.s', 5, 50));
      await until(() => batches.flat().length === 4);
      source.write(resolved('sandbox.s', 3, 30)); // redelivered: dropped
      source.write(resolved('sandbox.s', 6, 60));
      await until(() => batches.flat().length === 5);
      await subscription.close();
      expect(overlapped).to.equal(false);
      expect(batches.every((b) => b.length >= 1 && b.length <= 2)).to.equal(true);
      expect(batches.flat().map((e) => [e.streamId, e.position])).to.deep.equal([
        ['s', 20],
        ['s', 30],
        ['s', 40],
        ['s', 50],
        ['s', 60],
      ]);
      sinon.assert.calledOnce(source.unsubscribe);
    });

    it('a handler that throws stops the subscription and reaches onError as it is', async function () {
      const client = fakeClient();
      const source = subscriptionSource();
      client.subscribeToAll.returns(source);
      const failure = new Error('projection failed');
      const errors: unknown[] = [];
      let calls = 0;
      const subscription = open(client).subscribeToAll({ onError: (e) => errors.push(e) }, () => {
        calls += 1;
        throw failure;
      });
      source.write(resolved('sandbox.s', 0, 1));
      await until(() => errors.length === 1);
      source.write(resolved('sandbox.s', 1, 2));
      await subscription.close();
      expect(errors).to.deep.equal([failure]);
      expect(calls).to.equal(1);
      sinon.assert.calledOnce(source.unsubscribe);
    });

    it('a lost server reaches onError as StoreUnavailableError, after the events already received', async function () {
      const client = fakeClient();
      const source = subscriptionSource();
      client.subscribeToAll.returns(source);
      const received: number[] = [];
      const errors: unknown[] = [];
      open(client).subscribeToAll({ onError: (e) => errors.push(e) }, (batch) => {
        received.push(...batch.map((e) => e.position));
      });
      source.write(resolved('sandbox.s', 0, 1));
      await until(() => received.length === 1);
      source.destroy(fromGrpc(status.UNAVAILABLE));
      await until(() => errors.length === 1);
      expect(errors[0]).to.be.instanceOf(StoreUnavailableError).and.include({ store: 'eventstore' });
      expect(received).to.deep.equal([1]);
    });

    it('close() waits for the running handler call', async function () {
      const client = fakeClient();
      const source = subscriptionSource();
      client.subscribeToAll.returns(source);
      let release!: () => void;
      let started = false;
      let finished = false;
      const subscription = open(client).subscribeToAll({}, async () => {
        started = true;
        await new Promise<void>((r) => (release = r));
        finished = true;
      });
      source.write(resolved('sandbox.s', 0, 1));
      await until(() => started);
      let closed = false;
      const closing = subscription.close().then(() => (closed = true));
      await new Promise((r) => setTimeout(r, 10));
      expect(closed).to.equal(false);
      release();
      await closing;
      expect(finished).to.equal(true);
    });

    it('the store closes its subscriptions, disposes of a client it owns, and refuses work after', async function () {
      const client = fakeClient();
      const source = subscriptionSource();
      client.subscribeToAll.returns(source);
      const store = open(client, { ownsClient: true });
      store.subscribeToAll({}, () => {});
      await store.close();
      sinon.assert.calledOnce(source.unsubscribe);
      sinon.assert.calledOnce(client.dispose);
      expect(() => store.subscribeToAll({}, () => {})).to.throw(/closed/);
      expect(await store.readAll().catch((e: unknown) => e)).to.be.instanceOf(Error);
    });
  });

  describe('names, positions and the connection', function () {
    it('a namespace is letters, digits, _ or - (so that no namespace is a prefix of another)', function () {
      for (const bad of ['', 'a.b', '$all', 'sand box'])
        expect(() => new EsdbEventStore(fakeClient() as unknown as EsdbClient, { namespace: bad }), bad).to.throw(
          TypeError,
        );
      expect(open(fakeClient()).streamName('voucher-1')).to.equal('sandbox.voucher-1');
    });

    it('a log position beyond 2^53 is refused rather than rounded', function () {
      expect(toPosition({ commit: 2n ** 53n - 1n, prepare: 2n ** 53n - 1n })).to.equal(Number.MAX_SAFE_INTEGER);
      expect(() => toPosition({ commit: 2n ** 53n, prepare: 2n ** 53n })).to.throw(RangeError, /2\^53/);
    });

    it('openEsdbEventStore fails with a message naming EVENTSTORE_URL when the server cannot be reached', async function () {
      // Port 9 on 127.0.0.1 (discard) has no EventStoreDB: the connection is refused at once.
      const error = await openEsdbEventStore('esdb://admin:secret@127.0.0.1:9?tls=false', {
        namespace: 'sandbox',
        checkDeadlineMs: 3_000,
      }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.match(/EVENTSTORE_URL/);
      expect((error as Error).message).to.include('esdb://***@127.0.0.1:9');
      expect((error as Error).message).to.not.include('secret');
    });

    it('with the real client and no server at the address, every call is StoreUnavailableError', async function () {
      // Nothing listens on 127.0.0.1:9: the client's own errors, as it raises them for a lost server.
      const client = EventStoreDBClient.connectionString('esdb://127.0.0.1:9?tls=false&defaultDeadline=3000');
      const store = new EsdbEventStore(client, { namespace: 'sandbox', ownsClient: true });
      try {
        const calls = {
          append: store.appendToStream('s', [{ type: 'E', data: {} }]),
          readStream: store.readStream('s'),
          readAll: store.readAll(),
          headPosition: store.headPosition(),
        };
        for (const [name, call] of Object.entries(calls)) {
          expect(await call.catch((e: unknown) => e), name).to.be.instanceOf(StoreUnavailableError);
        }
        const errors: unknown[] = [];
        const subscription = store.subscribeToAll({ onError: (e) => errors.push(e) }, () => {});
        for (let i = 0; i < 1_000 && errors.length === 0; i += 1) await new Promise((r) => setTimeout(r, 5));
        expect(errors).to.have.length(1);
        expect(errors[0]).to.be.instanceOf(StoreUnavailableError);
        await subscription.close();
      } finally {
        await store.close();
      }
    });

    it('openEsdbEventStore refuses a connection string that is not one', async function () {
      const error = await openEsdbEventStore('http://127.0.0.1:2113', { namespace: 'sandbox' }).catch(
        (e: unknown) => e,
      );
      expect((error as Error).message).to.match(/EVENTSTORE_URL is not a valid EventStoreDB connection string/);
    });

    it('redact() hides credentials', function () {
      expect(redact('esdb://u:p@h:2113?tls=false')).to.equal('esdb://***@h:2113?tls=false');
      expect(redact('esdb://h:2113')).to.equal('esdb://h:2113');
    });
  });
});
