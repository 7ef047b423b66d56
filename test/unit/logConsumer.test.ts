/**
 * The log consumer shared by the projection groups and the webhook publisher: subscribes after its
 * stored checkpoint, answers read-your-writes waiters as it advances, and after a failed batch
 * reloads its checkpoint and subscribes again from there.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import type { BatchHandler, RecordedEvent, SubscribeOptions } from '../../src/core/eventStore.ts';
import { LogConsumer, RESTART_DELAY_MS } from '../../src/core/logConsumer.ts';

/** A subscription source that records each subscription and lets the test fail it. */
const fakeSource = () => {
  const subscriptions: Array<{ options: SubscribeOptions; handler: BatchHandler; closed: boolean }> = [];
  return {
    subscriptions,
    subscribeToAll(options: SubscribeOptions, handler: BatchHandler) {
      const entry = { options, handler, closed: false };
      subscriptions.push(entry);
      return {
        close: async () => {
          entry.closed = true;
        },
      };
    },
  };
};

const event = (position: number) => ({ position }) as RecordedEvent;

describe('LogConsumer', () => {
  afterEach(() => sinon.restore());

  it('subscribes after the stored checkpoint and answers waiters as it advances; stop answers the rest false', async () => {
    const source = fakeSource();
    const advanced: number[] = [];
    const consumer: LogConsumer<any> = new LogConsumer({
      events: source,
      maxBatchSize: 10,
      load: async () => 4,
      handle: (batch) => consumer.advance(batch.at(-1)!.position),
      failure: 'test consumer failed',
      onAdvance: (p) => advanced.push(p),
    });
    await consumer.start();
    expect(source.subscriptions.map((s) => s.options.after)).to.deep.equal([4]);
    expect(await consumer.waitFor(3)).to.equal(true);
    const six = consumer.waitFor(6);
    const nine = consumer.waitFor(9);
    await source.subscriptions[0]!.handler([event(5), event(6)]);
    expect(await six).to.equal(true);
    expect(consumer.checkpoint).to.equal(6);
    expect(advanced).to.deep.equal([6]);
    await consumer.stop();
    expect(await nine).to.equal(false);
    expect(source.subscriptions[0]!.closed).to.equal(true);
  });

  it('after a failed batch logs it, reloads the checkpoint and subscribes again from there', async () => {
    const clock = sinon.useFakeTimers();
    const source = fakeSource();
    const logged: string[] = [];
    let stored = 2;
    const consumer = new LogConsumer<any>({
      events: source,
      maxBatchSize: 10,
      load: async () => stored,
      handle: () => undefined,
      failure: 'test consumer failed',
      logger: { error: (_obj, msg) => logged.push(msg) },
    });
    await consumer.start();
    consumer.advance(7); // handled in memory, never stored
    stored = 5;
    source.subscriptions[0]!.options.onError!(new Error('disk full'));
    expect(logged).to.deep.equal(['test consumer failed; retrying from its checkpoint']);
    expect(source.subscriptions).to.have.length(1);
    await clock.tickAsync(RESTART_DELAY_MS);
    expect(source.subscriptions.map((s) => s.options.after)).to.deep.equal([2, 5]);
    expect(consumer.checkpoint).to.equal(5);
    await consumer.stop();
    source.subscriptions[1]!.options.onError!(new Error('after stop'));
    await clock.tickAsync(RESTART_DELAY_MS);
    expect(source.subscriptions).to.have.length(2);
  });
});
