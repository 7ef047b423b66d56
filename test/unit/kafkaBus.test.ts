/**
 * The kafkajs bus at the client boundary: what it asks kafkajs for, and how it maps the errors
 * kafkajs raises, including those a healthy single broker cannot be made to raise. The contract
 * suite (test/contract/busKafka.test.ts) covers its behaviour on a real broker.
 */
import net from 'node:net';
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import type { Kafka } from 'kafkajs';
import sinon from 'sinon';
import { BusUnavailableError, type DeliveredMessage } from '../../src/core/bus.ts';
import { KafkaBus, type KafkaBusOptions } from '../../src/infrastructure/bus/kafkaBus.ts';

/** kafkajs's error classes as its JavaScript defines them (its type declarations omit some arguments). */
const errors = kafkajs as unknown as {
  KafkaJSCreateTopicError: new (
    e: { message: string; type: string; code: number; retriable?: boolean },
    topic: string,
  ) => Error;
  KafkaJSProtocolError: new (e: { message: string; type: string; code: number; retriable: boolean }) => Error;
  KafkaJSBrokerNotFound: new (message: string) => Error;
};

type EachMessage = (payload: {
  topic: string;
  partition: number;
  message: { key: Buffer | null; value: Buffer | null; offset: string; headers?: Record<string, Buffer> };
  heartbeat: () => Promise<void>;
}) => Promise<void>;

/** A stand-in kafkajs client whose admin, producer and consumer are sinon stubs. */
function fakeKafka() {
  const admin = {
    connect: sinon.stub().resolves(),
    disconnect: sinon.stub().resolves(),
    listTopics: sinon.stub().resolves(['voucher-events.sandbox']),
    createTopics: sinon.stub().resolves(true),
    describeCluster: sinon.stub().resolves({ brokers: [{}, {}], controller: 1, clusterId: 'c' }),
  };
  const producer = {
    connect: sinon.stub().resolves(),
    disconnect: sinon.stub().resolves(),
    send: sinon.stub().resolves([]),
  };
  const listeners = new Map<string, (event: unknown) => void>();
  let eachMessage: EachMessage | undefined;
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash' },
    connect: sinon.stub().resolves(),
    disconnect: sinon.stub().resolves(),
    subscribe: sinon.stub().resolves(),
    on: sinon.stub().callsFake((event: string, listener: (event: unknown) => void) => {
      listeners.set(event, listener);
      return () => listeners.delete(event);
    }),
    run: sinon.stub().callsFake(async (config: { eachMessage: EachMessage }) => {
      eachMessage = config.eachMessage;
      setImmediate(() => listeners.get('consumer.group_join')?.({ payload: {} }));
    }),
  };
  const kafka = {
    admin: sinon.stub().returns(admin),
    producer: sinon.stub().returns(producer),
    consumer: sinon.stub().returns(consumer),
  };
  return {
    kafka: kafka as unknown as Pick<Kafka, 'admin' | 'producer' | 'consumer'>,
    stubs: kafka,
    admin,
    producer,
    consumer,
    eachMessage: () => eachMessage!,
    join: () => listeners.get('consumer.group_join')?.({ payload: {} }),
    crash: (error: Error, restart = false) => listeners.get('consumer.crash')?.({ payload: { error, restart } }),
  };
}

const options = (fake: ReturnType<typeof fakeKafka>, extra: Partial<KafkaBusOptions> = {}): KafkaBusOptions => ({
  brokers: ['kafka-1:9092', 'kafka-2:9092'],
  partitions: 6,
  replication: 3,
  kafka: fake.kafka,
  ...extra,
});

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('KafkaBus (kafkajs boundary)', function () {
  describe('start', function () {
    it('creates the missing environment topics with the configured partitions and replication, then an idempotent producer with one request in flight', async function () {
      const fake = fakeKafka();
      await new KafkaBus(options(fake)).start(['sandbox', 'production']);
      sinon.assert.calledOnceWithExactly(fake.admin.createTopics, {
        waitForLeaders: true,
        topics: [{ topic: 'voucher-events.production', numPartitions: 6, replicationFactor: 3 }],
      });
      sinon.assert.calledOnce(fake.stubs.producer);
      expect(fake.stubs.producer.firstCall.args[0]).to.include({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
      });
      sinon.assert.calledOnce(fake.producer.connect);
      sinon.assert.calledOnce(fake.admin.disconnect);
    });

    for (const [brokers, replicas] of [
      [2, 2],
      [5, 3],
    ]) {
      it(`without a replication setting, creates topics with ${replicas} replicas on a cluster of ${brokers} brokers`, async function () {
        const fake = fakeKafka();
        fake.admin.describeCluster.resolves({ brokers: Array(brokers).fill({}), controller: 1, clusterId: 'c' });
        await new KafkaBus(options(fake, { replication: undefined })).start(['production']);
        expect(fake.admin.createTopics.firstCall.args[0].topics[0].replicationFactor).to.equal(replicas);
      });
    }

    it('creates no topic when every environment has one', async function () {
      const fake = fakeKafka();
      fake.admin.listTopics.resolves(['voucher-events.sandbox', 'voucher-events.production']);
      await new KafkaBus(options(fake)).start(['sandbox', 'production']);
      sinon.assert.notCalled(fake.admin.createTopics);
    });

    it('names the brokers and KAFKA_BROKERS when none can be reached', async function () {
      const fake = fakeKafka();
      const refused = new kafkajs.KafkaJSConnectionError('Connection error: connect ECONNREFUSED', {
        broker: 'kafka-1:9092',
      });
      fake.admin.connect.rejects(new kafkajs.KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 1 }));
      const error = await rejectionOf(new KafkaBus(options(fake)).start(['sandbox']));
      expect(error).to.be.instanceOf(BusUnavailableError);
      expect(error.message).to.contain('kafka-1:9092,kafka-2:9092').and.contain('KAFKA_BROKERS');
      expect(error.message).to.contain('ECONNREFUSED');
      sinon.assert.notCalled(fake.stubs.producer);
      sinon.assert.calledOnce(fake.admin.disconnect);
    });

    it('names KAFKA_REPLICATION when the cluster cannot replicate a topic that much', async function () {
      const fake = fakeKafka();
      const invalid = new errors.KafkaJSCreateTopicError(
        {
          message: 'Replication factor: 3 larger than available brokers: 1.',
          type: 'INVALID_REPLICATION_FACTOR',
          code: 38,
          retriable: false,
        },
        'voucher-events.production',
      );
      fake.admin.createTopics.rejects(new kafkajs.KafkaJSAggregateError('Topic creation errors', [invalid]));
      const error = await rejectionOf(new KafkaBus(options(fake)).start(['production']));
      expect(error).to.not.be.instanceOf(BusUnavailableError);
      expect(error.message).to.contain('KAFKA_REPLICATION').and.contain('replication factor 3');
      expect(error.message).to.contain('larger than available brokers');
    });

    it('names KAFKA_PARTITIONS when the cluster refuses the partition count', async function () {
      const fake = fakeKafka();
      const invalid = new errors.KafkaJSCreateTopicError(
        { message: 'Number of partitions must be larger than 0.', type: 'INVALID_PARTITIONS', code: 37 },
        'voucher-events.production',
      );
      fake.admin.createTopics.rejects(new kafkajs.KafkaJSAggregateError('Topic creation errors', [invalid]));
      const error = await rejectionOf(new KafkaBus(options(fake)).start(['production']));
      expect(error.message).to.contain('KAFKA_PARTITIONS').and.contain('6 partitions');
    });

    it('fails on a real closed port with an error naming it', async function () {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      await new Promise((resolve) => server.close(resolve));
      const bus = new KafkaBus({ brokers: [`127.0.0.1:${port}`], partitions: 1, replication: 1, connectRetries: 0 });
      const error = await rejectionOf(bus.start(['sandbox']));
      expect(error).to.be.instanceOf(BusUnavailableError);
      expect(error.message).to.contain(`Kafka at 127.0.0.1:${port} (KAFKA_BROKERS)`);
    });
  });

  describe('publish', function () {
    it('sends keyed messages to the environment topic, waiting for all in-sync replicas', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake));
      await bus.start(['sandbox']);
      await bus.publish('sandbox', [{ key: 'v1', value: '{"a":1}', headers: { type: 'voucher.created' } }]);
      sinon.assert.calledOnceWithExactly(fake.producer.send, {
        topic: 'voucher-events.sandbox',
        acks: -1,
        messages: [{ key: 'v1', value: '{"a":1}', headers: { type: 'voucher.created' } }],
      });
    });

    it('refuses to publish before start', async function () {
      const error = await rejectionOf(
        new KafkaBus(options(fakeKafka())).publish('sandbox', [{ key: 'k', value: 'v' }]),
      );
      expect(error.message).to.contain('not started');
    });

    for (const [name, error] of [
      ['a lost connection', new kafkajs.KafkaJSConnectionError('Connection error: read ECONNRESET')],
      [
        'retries exhausted',
        new kafkajs.KafkaJSNumberOfRetriesExceeded(new kafkajs.KafkaJSError('NOT_ENOUGH_REPLICAS'), {
          retryCount: 5,
          retryTime: 1,
        }),
      ],
      ['a request timeout', new kafkajs.KafkaJSRequestTimeoutError('Request Produce(key: 0, version: 7) timed out')],
      ['a broker missing from the metadata', new errors.KafkaJSBrokerNotFound('Broker 2 not found')],
    ] as const) {
      it(`rejects with BusUnavailableError naming the brokers and topic on ${name}`, async function () {
        const fake = fakeKafka();
        const bus = new KafkaBus(options(fake));
        await bus.start(['sandbox']);
        fake.producer.send.rejects(error);
        const rejected = await rejectionOf(bus.publish('sandbox', [{ key: 'k', value: 'v' }]));
        expect(rejected).to.be.instanceOf(BusUnavailableError);
        expect(rejected.message).to.contain('kafka-1:9092,kafka-2:9092').and.contain('voucher-events.sandbox');
        expect(rejected.cause).to.equal(error);
      });
    }

    it('passes a non-retriable broker answer (a message too large) through unchanged', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake));
      await bus.start(['sandbox']);
      const tooLarge = new errors.KafkaJSProtocolError({
        message: 'The request included a message larger than the max message size the server will accept',
        type: 'MESSAGE_TOO_LARGE',
        code: 10,
        retriable: false,
      });
      fake.producer.send.rejects(tooLarge);
      expect(await rejectionOf(bus.publish('sandbox', [{ key: 'k', value: 'v' }]))).to.equal(tooLarge);
    });
  });

  describe('subscribe', function () {
    const message = (offset: string) => ({
      topic: 'voucher-events.sandbox',
      partition: 2,
      message: { key: Buffer.from('v1'), value: Buffer.from('{}'), offset, headers: { type: Buffer.from('t') } },
      heartbeat: sinon.stub().resolves(),
    });

    it('joins the group from the earliest offset with the configured timeouts and resolves once joined', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake, { sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1_000 }));
      await bus.subscribe({ groupId: 'dispatchers', environments: ['sandbox'], handler: async () => {} });
      expect(fake.stubs.consumer.firstCall.args[0]).to.include({
        groupId: 'dispatchers',
        sessionTimeout: 10_000,
        heartbeatInterval: 1_000,
        allowAutoTopicCreation: false,
      });
      sinon.assert.calledOnceWithExactly(fake.consumer.subscribe, {
        topics: ['voucher-events.sandbox'],
        fromBeginning: true,
      });
    });

    it('hands a message to the handler as the port describes it and resolves only after the handler did', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake));
      let release!: () => void;
      const seen: DeliveredMessage[] = [];
      await bus.subscribe({
        groupId: 'g',
        environments: ['sandbox'],
        handler: (delivered) => {
          seen.push(delivered);
          return new Promise<void>((resolve) => (release = resolve));
        },
      });
      let resolved = false;
      const handling = fake
        .eachMessage()(message('41'))
        .then(() => (resolved = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(resolved, 'kafkajs resolves the offset once eachMessage resolves').to.equal(false);
      release();
      await handling;
      expect(seen).to.deep.equal([
        { environment: 'sandbox', key: 'v1', value: '{}', headers: { type: 't' }, partition: 2, offset: '41' },
      ]);
    });

    it('hands a rejected message to the handler again after a heartbeat, reporting the rejection', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake));
      const handler = sinon.stub().onFirstCall().rejects(new Error('receiver down')).resolves();
      const onHandlerError = sinon.spy();
      await bus.subscribe({ groupId: 'g', environments: ['sandbox'], handler, onHandlerError, retryDelayMs: 1 });
      const payload = message('7');
      await fake.eachMessage()(payload);
      sinon.assert.calledTwice(handler);
      sinon.assert.calledOnce(onHandlerError);
      expect(onHandlerError.firstCall.args[0].message).to.equal('receiver down');
      sinon.assert.calledOnce(payload.heartbeat);
    });

    it('while stopping, leaves a rejected message unresolved so the next owner of the partition gets it', async function () {
      const fake = fakeKafka();
      const bus = new KafkaBus(options(fake));
      const subscription = await bus.subscribe({
        groupId: 'g',
        environments: ['sandbox'],
        handler: async () => {
          throw new Error('receiver down');
        },
        retryDelayMs: 1,
      });
      await subscription.stop();
      sinon.assert.calledOnce(fake.consumer.disconnect);
      const error = await rejectionOf(fake.eachMessage()(message('7')));
      expect(error.message).to.equal('receiver down');
    });

    it('rejects with BusUnavailableError and disconnects when the consumer crashes before joining', async function () {
      const fake = fakeKafka();
      fake.consumer.run.callsFake(async () => {
        setImmediate(() => fake.crash(new kafkajs.KafkaJSConnectionError('Connection error: connect ECONNREFUSED')));
      });
      const bus = new KafkaBus(options(fake));
      const error = await rejectionOf(
        bus.subscribe({ groupId: 'g', environments: ['sandbox'], handler: async () => {} }),
      );
      expect(error).to.be.instanceOf(BusUnavailableError);
      expect(error.message).to.contain('kafka-1:9092,kafka-2:9092');
      sinon.assert.calledOnce(fake.consumer.disconnect);
    });

    /** A retriable error kafkajs restarts the consumer after: the group's coordinator still loading. */
    const loading = () =>
      new errors.KafkaJSProtocolError({
        message: "The coordinator is loading and hence can't process requests for this group",
        type: 'COORDINATOR_LOAD_IN_PROGRESS',
        code: 14,
        retriable: true,
      });

    it('waits for the join when the consumer crashes and kafkajs restarts it', async function () {
      const fake = fakeKafka();
      fake.consumer.run.callsFake(async () => {
        setImmediate(() => fake.crash(loading(), true));
        setTimeout(() => fake.crash(loading(), true), 5);
        setTimeout(() => fake.join(), 10);
      });
      const subscription = await new KafkaBus(options(fake, { joinTimeoutMs: 5_000 })).subscribe({
        groupId: 'g',
        environments: ['sandbox'],
        handler: async () => {},
      });
      sinon.assert.notCalled(fake.consumer.disconnect);
      await subscription.stop();
    });

    it('rejects with BusUnavailableError naming the last error when restarts do not join in time', async function () {
      const fake = fakeKafka();
      fake.consumer.run.callsFake(async () => {
        setImmediate(() => fake.crash(loading(), true));
      });
      const error = await rejectionOf(
        new KafkaBus(options(fake, { joinTimeoutMs: 50 })).subscribe({
          groupId: 'g',
          environments: ['sandbox'],
          handler: async () => {},
        }),
      );
      expect(error).to.be.instanceOf(BusUnavailableError);
      expect(error.message).to.contain('coordinator is loading');
      sinon.assert.calledOnce(fake.consumer.disconnect);
    });
  });
});
