import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { SqliteKvStore } from '../../src/infrastructure/kvStore/sqliteKvStore.ts';
import { FakeClock } from '../support/fakeClock.ts';

describe('SqliteKvStore', () => {
  let dir: string;
  let file: string;
  let clock: FakeClock;
  let kv: SqliteKvStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-'));
    file = path.join(dir, 'state.db');
    clock = new FakeClock('2026-03-01T00:00:00Z');
    kv = SqliteKvStore.open(file, clock, { relaxedNamespaces: ['quotes'] });
  });
  afterEach(async () => {
    await kv.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const now = () => clock.now().getTime();

  it('stores, reads and deletes JSON values until they expire', async () => {
    await kv.put('idempotency', 'k1', { status: 201, body: { id: 'v_1' } }, now() + 1_000);
    expect(await kv.get('idempotency', 'k1')).to.deep.equal({ status: 201, body: { id: 'v_1' } });
    expect(await kv.get('quotes', 'k1')).to.equal(null); // namespaces are apart
    clock.advance(1_000);
    expect(await kv.get('idempotency', 'k1')).to.equal(null);
    await kv.put('idempotency', 'k2', 'x', now() + 1_000);
    await kv.delete('idempotency', 'k2');
    expect(await kv.get('idempotency', 'k2')).to.equal(null);
  });

  it('putIfAbsent writes only over a missing or expired record', async () => {
    expect(await kv.putIfAbsent('admin', 'password', 'first', now() + 1_000)).to.equal(true);
    expect(await kv.putIfAbsent('admin', 'password', 'second', now() + 1_000)).to.equal(false);
    expect(await kv.get('admin', 'password')).to.equal('first');
    clock.advance(1_000);
    expect(await kv.putIfAbsent('admin', 'password', 'third', now() + 1_000)).to.equal(true);
    expect(await kv.get('admin', 'password')).to.equal('third');
  });

  it('purges expired records of every namespace and counts them', async () => {
    await kv.put('quotes', 'a', 1, now() + 10);
    await kv.put('idempotency', 'b', 2, now() + 10);
    await kv.put('idempotency', 'c', 3, now() + 10_000);
    expect(await kv.purgeExpired(now() + 10)).to.equal(2);
    expect(await kv.get('idempotency', 'c')).to.equal(3);
  });

  it('writes relaxed namespaces at synchronous=NORMAL and the rest at FULL, in the same file', async () => {
    expect(kv.synchronousOf('quotes')).to.equal(1);
    expect(kv.synchronousOf('idempotency')).to.equal(2);
    await kv.put('quotes', 'q', { order: { value: 100 } }, now() + 60_000);
    await kv.put('idempotency', 'i', 'kept', now() + 60_000);
    await kv.close();
    kv = SqliteKvStore.open(file, clock); // reopened without relaxed namespaces: one FULL connection
    expect(kv.synchronousOf('quotes')).to.equal(2);
    expect(await kv.get('quotes', 'q')).to.deep.equal({ order: { value: 100 } });
    expect(await kv.get('idempotency', 'i')).to.equal('kept');
  });
});
