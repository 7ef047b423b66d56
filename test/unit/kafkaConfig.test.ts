import { expect } from 'chai';
import { DEFAULT_KAFKA_PARTITIONS, loadConfig } from '../../src/config.ts';
import { createBus } from '../../src/infrastructure/bus/createBus.ts';
import { InMemoryBus } from '../../src/infrastructure/bus/inMemoryBus.ts';
import { KafkaBus } from '../../src/infrastructure/bus/kafkaBus.ts';

describe('Kafka configuration (KAFKA_BROKERS, KAFKA_PARTITIONS, KAFKA_REPLICATION)', function () {
  it('has no Kafka without KAFKA_BROKERS, and the bus is then in memory', function () {
    const config = loadConfig({});
    expect(config.kafka).to.equal(undefined);
    expect(createBus(config.kafka)).to.be.instanceOf(InMemoryBus);
  });

  it('reads the brokers, partitions and replication, and the bus is then Kafka', function () {
    const config = loadConfig({
      KAFKA_BROKERS: ' kafka-1:9092, 10.0.0.7:19092,[::1]:9092 ',
      KAFKA_PARTITIONS: '24',
      KAFKA_REPLICATION: '3',
    });
    expect(config.kafka).to.deep.equal({
      brokers: ['kafka-1:9092', '10.0.0.7:19092', '[::1]:9092'],
      partitions: 24,
      replication: 3,
    });
    expect(createBus(config.kafka)).to.be.instanceOf(KafkaBus);
  });

  it('defaults to 12 partitions and leaves the replication to the cluster size', function () {
    expect(loadConfig({ KAFKA_BROKERS: 'kafka:9092' }).kafka).to.deep.equal({
      brokers: ['kafka:9092'],
      partitions: DEFAULT_KAFKA_PARTITIONS,
    });
    expect(DEFAULT_KAFKA_PARTITIONS).to.equal(12);
  });

  it('names the topics after KAFKA_TOPIC_PREFIX and refuses one Kafka would not accept', function () {
    const config = loadConfig({ KAFKA_BROKERS: 'kafka:9092', KAFKA_TOPIC_PREFIX: 'shop-7.vouchers' });
    expect(config.kafka?.topicPrefix).to.equal('shop-7.vouchers');
    expect(createBus(config.kafka).topicOf('sandbox')).to.equal('shop-7.vouchers.sandbox');
    expect(createBus(loadConfig({ KAFKA_BROKERS: 'kafka:9092' }).kafka).topicOf('sandbox')).to.equal(
      'voucher-events.sandbox',
    );
    expect(() => loadConfig({ KAFKA_BROKERS: 'kafka:9092', KAFKA_TOPIC_PREFIX: 'a/b' })).to.throw(
      `KAFKA_TOPIC_PREFIX must be 1 to 100 letters, digits, '.', '_' or '-', got "a/b"`,
    );
  });

  for (const value of ['kafka', 'kafka:', 'kafka:0', 'kafka:65536', 'kafka:9092,', 'http://kafka:9092', 'a b:1']) {
    it(`refuses KAFKA_BROKERS="${value}", naming it`, function () {
      expect(() => loadConfig({ KAFKA_BROKERS: value })).to.throw(
        `KAFKA_BROKERS must be comma-separated host:port pairs, got "${value}"`,
      );
    });
  }

  for (const [name, value, max] of [
    ['KAFKA_PARTITIONS', '0', 10_000],
    ['KAFKA_PARTITIONS', '10001', 10_000],
    ['KAFKA_PARTITIONS', '1.5', 10_000],
    ['KAFKA_REPLICATION', '0', 32_767],
    ['KAFKA_REPLICATION', 'three', 32_767],
    ['KAFKA_REPLICATION', '-1', 32_767],
  ] as const) {
    it(`refuses ${name}="${value}", naming it`, function () {
      expect(() => loadConfig({ KAFKA_BROKERS: 'kafka:9092', [name]: value })).to.throw(
        `${name} must be an integer from 1 to ${max}, got "${value}"`,
      );
    });
  }
});
