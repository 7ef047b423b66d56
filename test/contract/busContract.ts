/**
 * Contract every Bus implementation must pass (in memory, Kafka).
 *
 * Each test gets a harness of its own: its topics (a fresh topic prefix) and group ids are unique,
 * so a real broker may be shared with other tests. Waits poll the recorded messages and are
 * bounded by `waitLimitMs`; none asserts on elapsed time.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Bus, BusMessage, DeliveredMessage } from '../../src/core/bus.ts';

export interface CrashableMember {
  /** Ends the member as a killed process ends: no further handling, commit or goodbye to the group. */
  kill(): Promise<void>;
}

export interface CrashableOptions {
  groupId: string;
  environment: string;
  /** The handler of the member's `hangAt`-th message (0-based) never resolves. */
  hangAt: number;
  onHandled: (message: DeliveredMessage) => void;
  onHanging: (message: DeliveredMessage) => void;
}

export interface BusHarness {
  /** A new, unstarted client of the bus, as another process would hold one, on this harness's topics. */
  client(): Promise<Bus>;
  /** Partitions of the environment's topic. */
  partitions(environment: string): Promise<number>;
  /** A group member that can be killed like a crashed process (a child process where the bus allows). */
  crashable(options: CrashableOptions): Promise<CrashableMember>;
  cleanup(): Promise<void>;
}

export interface BusContractOptions {
  /** Partitions the harness's clients create topics with. */
  partitions: number;
  waitLimitMs: number;
}

const ENVIRONMENTS = ['sandbox', 'production'] as const;

interface Seen {
  member: string;
  key: string;
  seq: number;
  environment: string;
}

/** `count` messages per key, interleaved across keys, each value `{ key, seq }`. */
function messages(keys: string[], count: number, from = 0): BusMessage[] {
  const list: BusMessage[] = [];
  for (let seq = from; seq < from + count; seq++) {
    for (const key of keys) list.push({ key, value: JSON.stringify({ key, seq }), headers: { seq: String(seq) } });
  }
  return list;
}

const seqOf = (message: DeliveredMessage): number => (JSON.parse(message.value) as { seq: number }).seq;

/**
 * Per-key order under at-least-once delivery: every handling of a key's message n > from was
 * preceded by a handling of n - 1, and every message from..to-1 was handled.
 */
function expectKeyOrder(seen: Seen[], keys: string[], to: number, from = 0): void {
  for (const key of keys) {
    const sequence = seen.filter((s) => s.key === key).map((s) => s.seq);
    const handled = new Set<number>();
    for (const seq of sequence) {
      if (seq > from) expect(handled.has(seq - 1), `${key}: ${seq} before ${seq - 1} in [${sequence}]`).to.equal(true);
      handled.add(seq);
    }
    for (let seq = from; seq < to; seq++) expect(handled.has(seq), `${key}: ${seq} never handled`).to.equal(true);
  }
}

export function busContract(name: string, factory: () => Promise<BusHarness>, options: BusContractOptions): void {
  const { partitions, waitLimitMs } = options;

  describe(`Bus contract: ${name}`, function () {
    this.timeout(waitLimitMs * 4);
    let harness: BusHarness;
    let clients: Bus[];

    beforeEach(async function () {
      harness = await factory();
      clients = [];
    });

    afterEach(async function () {
      await Promise.all(clients.map((client) => client.close()));
      await harness.cleanup();
    });

    async function started(): Promise<Bus> {
      const client = await harness.client();
      clients.push(client);
      await client.start(ENVIRONMENTS);
      return client;
    }

    async function waitUntil(what: string, done: () => boolean): Promise<void> {
      const deadline = Date.now() + waitLimitMs;
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`gave up waiting (${waitLimitMs} ms) until ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    /** A subscription recording what it handled into `seen`, tagged `member`. */
    async function member(bus: Bus, groupId: string, memberName: string, seen: Seen[], environment = 'sandbox') {
      return bus.subscribe({
        groupId,
        environments: [environment],
        handler: async (message) => {
          seen.push({ member: memberName, key: message.key, seq: seqOf(message), environment: message.environment });
        },
      });
    }

    it('creates one topic per environment, named after it, with the configured partitions', async function () {
      const bus = await started();
      const [sandbox, production] = ENVIRONMENTS.map((environment) => bus.topicOf(environment));
      expect(sandbox).to.contain('sandbox');
      expect(production).to.contain('production');
      expect(sandbox).to.not.equal(production);
      for (const environment of ENVIRONMENTS) expect(await harness.partitions(environment)).to.equal(partitions);
    });

    it("delivers each key's messages in the order they were published, with key, value and headers", async function () {
      const bus = await started();
      const keys = ['v-a', 'v-b', 'v-c', 'v-d'];
      const all = messages(keys, 25);
      await bus.publish('sandbox', all.slice(0, 40));
      for (const message of all.slice(40, 60)) await bus.publish('sandbox', [message]);
      await bus.publish('sandbox', all.slice(60));
      const delivered: DeliveredMessage[] = [];
      await bus.subscribe({
        groupId: `g-${randomUUID()}`,
        environments: ['sandbox'],
        handler: async (message) => {
          delivered.push(message);
        },
      });
      await waitUntil('100 messages are handled', () => delivered.length >= all.length);
      for (const key of keys) {
        const sequence = delivered.filter((m) => m.key === key).map(seqOf);
        expect(sequence, key).to.deep.equal([...Array(25).keys()]);
      }
      const first = delivered.find((m) => m.key === 'v-c' && seqOf(m) === 7)!;
      expect(first).to.include({ environment: 'sandbox', value: JSON.stringify({ key: 'v-c', seq: 7 }) });
      expect(first.headers).to.deep.equal({ seq: '7' });
      expect(first.partition).to.be.within(0, partitions - 1);
      expect(first.offset).to.match(/^\d+$/);
    });

    it('hands a message whose handler rejected to the handler again before the next of its partition', async function () {
      const bus = await started();
      await bus.publish('sandbox', messages(['v-retry'], 5));
      const attempts: number[] = [];
      const errors: number[] = [];
      let failed = false;
      await bus.subscribe({
        groupId: `g-${randomUUID()}`,
        environments: ['sandbox'],
        retryDelayMs: 50,
        onHandlerError: (_error, message) => errors.push(seqOf(message)),
        handler: async (message) => {
          const seq = seqOf(message);
          attempts.push(seq);
          if (seq === 2 && !failed) {
            failed = true;
            throw new Error('receiver down');
          }
        },
      });
      await waitUntil('message 4 is handled', () => attempts.includes(4));
      expect(attempts).to.deep.equal([0, 1, 2, 2, 3, 4]);
      expect(errors).to.deep.equal([2]);
    });

    it('a member that stopped committed what it handled: the next member of its group goes on from there', async function () {
      const publisher = await started();
      const keys = ['v-1', 'v-2', 'v-3'];
      await publisher.publish('sandbox', messages(keys, 20));
      const groupId = `g-${randomUUID()}`;
      const first: Seen[] = [];
      const firstMember = await member(await started(), groupId, 'first', first);
      await waitUntil('the first member handled 15 messages', () => first.length >= 15);
      await firstMember.stop();
      const handledByFirst = first.length;
      await publisher.publish('sandbox', messages(keys, 5, 20));
      const second: Seen[] = [];
      await member(await started(), groupId, 'second', second);
      await waitUntil('all 75 messages are handled', () => first.length + second.length >= 75);
      expect(first.length, 'the first member handled nothing after stop resolved').to.equal(handledByFirst);
      const id = (s: Seen) => `${s.key}/${s.seq}`;
      const again = second.filter((s) => first.some((f) => id(f) === id(s)));
      expect(again.map(id), 'handled again after a clean stop').to.deep.equal([]);
      expectKeyOrder([...first, ...second], keys, 25);
    });

    it('hands the message in hand of a crashed member, and all after it, to the next member (at-least-once)', async function () {
      const publisher = await started();
      const keys = ['v-x', 'v-y', 'v-z'];
      await publisher.publish('sandbox', messages(keys, 10));
      const groupId = `g-${randomUUID()}`;
      const completed: Seen[] = [];
      let hanging: Seen | undefined;
      const tag = (m: DeliveredMessage): Seen => ({
        member: 'crashed',
        key: m.key,
        seq: seqOf(m),
        environment: m.environment,
      });
      const crashed = await harness.crashable({
        groupId,
        environment: 'sandbox',
        hangAt: 12,
        onHandled: (m) => completed.push(tag(m)),
        onHanging: (m) => (hanging = tag(m)),
      });
      await waitUntil('the crashable member hangs on its 13th message', () => hanging !== undefined);
      await crashed.kill();
      await publisher.publish('sandbox', messages(keys, 5, 10));
      const successor: Seen[] = [];
      await member(await started(), groupId, 'successor', successor);
      const id = (s: Seen) => `${s.key}/${s.seq}`;
      const done = () => new Set([...completed, ...successor].map(id)).size === 45;
      await waitUntil('every message is handled by the crashed member or its successor', done);
      expect(successor.map(id), 'the message in hand is handed again').to.include(id(hanging!));
      expectKeyOrder([...completed, ...successor], keys, 15);
    });

    it("two members of a group share the partitions and keep each key's order across rebalances", async function () {
      const publisher = await started();
      const keys = Array.from({ length: 12 }, (_, i) => `v-${i}`);
      const groupId = `g-${randomUUID()}`;
      const seen: Seen[] = [];
      const inHand = new Map<string, number>();
      let overlapping = 0;
      const subscribe = async (memberName: string) =>
        (await started()).subscribe({
          groupId,
          environments: ['sandbox'],
          handler: async (message) => {
            const now = (inHand.get(message.key) ?? 0) + 1;
            inHand.set(message.key, now);
            if (now > 1) overlapping += 1;
            await new Promise((resolve) => setTimeout(resolve, 2));
            seen.push({ member: memberName, key: message.key, seq: seqOf(message), environment: message.environment });
            inHand.set(message.key, now - 1);
          },
        });
      // Members join and leave while messages are in hand: each handler takes a couple of milliseconds.
      const first = await subscribe('first');
      await publisher.publish('sandbox', messages(keys, 10));
      await waitUntil('the first member handled 20 messages', () => seen.length >= 20);
      await subscribe('second');
      const joinedAt = seen.length;
      await publisher.publish('sandbox', messages(keys, 5, 10));
      await waitUntil('both members handled messages while both were in the group', () =>
        ['first', 'second'].every((name) => seen.slice(joinedAt).some((s) => s.member === name)),
      );
      await first.stop();
      const stoppedAt = seen.length;
      await publisher.publish('sandbox', messages(keys, 5, 15));
      /** Each key's message `last` was handled (and, in key order, every one before it). */
      const handled = (last: number) => () => keys.every((key) => seen.some((s) => s.key === key && s.seq === last));
      await waitUntil("every key's last message is handled", handled(19));
      expect(seen.slice(stoppedAt).filter((s) => s.member === 'first')).to.deep.equal([]);
      expectKeyOrder(seen, keys, 20);
      expect(overlapping, 'handlers of one key running at the same time in both members').to.equal(0);
    });

    it('keeps environments apart: a subscriber of one never gets the messages of the other', async function () {
      const bus = await started();
      await bus.publish('sandbox', messages(['v-same'], 3));
      await bus.publish('production', messages(['v-same'], 4, 100));
      const sandbox: Seen[] = [];
      const production: Seen[] = [];
      await member(bus, `g-${randomUUID()}`, 'sandbox', sandbox, 'sandbox');
      await member(bus, `g-${randomUUID()}`, 'production', production, 'production');
      await waitUntil('both subscribers handled their messages', () => sandbox.length >= 3 && production.length >= 4);
      await bus.publish('sandbox', messages(['v-same'], 1, 3));
      await waitUntil('the sandbox subscriber handled the late message', () => sandbox.length >= 4);
      expect(sandbox.map((s) => [s.environment, s.seq])).to.deep.equal([0, 1, 2, 3].map((seq) => ['sandbox', seq]));
      expect(production.map((s) => [s.environment, s.seq])).to.deep.equal(
        [100, 101, 102, 103].map((seq) => ['production', seq]),
      );
    });

    it('gives every group every message', async function () {
      const bus = await started();
      await bus.publish('sandbox', messages(['v-g1', 'v-g2'], 6));
      const one: Seen[] = [];
      const two: Seen[] = [];
      await member(bus, `g-${randomUUID()}`, 'one', one);
      await member(await started(), `g-${randomUUID()}`, 'two', two);
      await waitUntil('both groups handled 12 messages', () => one.length >= 12 && two.length >= 12);
      expectKeyOrder(one, ['v-g1', 'v-g2'], 6);
      expectKeyOrder(two, ['v-g1', 'v-g2'], 6);
    });
  });
}
