/** The pure webhook rules: refused ranges, the retry schedule with jitter and Retry-After, the operator settings. */
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { nextDelay, parseRetryAfter } from '../../src/domain/webhooks/delivery.ts';
import { addressLiteral, parseCidrs, refusedRange } from '../../src/domain/webhooks/targets.ts';
import { DEFAULT_RETRY_DELAYS_MS, parseDurations } from '../../src/application/webhooks/settings.ts';
import { deliveryIdOf, eventIdOf } from '../../src/application/webhooks/publisher.ts';
import { eventId } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';

describe('webhook targets: refused ranges', () => {
  it('refuses every range that is not public unicast, IPv4-mapped included, and allows public addresses', () => {
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'linkLocal'],
      ['100.64.0.1', 'carrierGradeNat'],
      ['224.0.0.1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['255.255.255.255', 'broadcast'],
      ['240.0.0.1', 'reserved'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fe80::1', 'linkLocal'],
      ['fd12::1', 'uniqueLocal'],
      ['ff02::1', 'multicast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:10.1.2.3', 'private'],
      ['2001:db8::1', 'reserved'],
    ];
    for (const [address, range] of refused) expect(refusedRange(address, []), address).to.equal(range);
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(refusedRange(address, []), address).to.equal(null);
  });

  it('allows what the operator lists by CIDR (IPv4-mapped addresses by their IPv4 range)', () => {
    const allowed = parseCidrs('127.0.0.0/8, 10.0.0.0/8,fd00::/8,192.168.1.7');
    for (const address of ['127.0.0.1', '10.200.0.1', '::ffff:10.0.0.1', 'fd00::5', '192.168.1.7'])
      expect(refusedRange(address, allowed), address).to.equal(null);
    for (const address of ['192.168.1.8', '::1', '172.16.0.1'])
      expect(refusedRange(address, allowed), address).to.not.equal(null);
    expect(() => parseCidrs('10.0.0.0/8,nonsense')).to.throw(/"nonsense" is not a CIDR/);
  });

  it('tells address literals from names', () => {
    expect(addressLiteral('[::1]')).to.equal('::1');
    expect(addressLiteral('127.0.0.1')).to.equal('127.0.0.1');
    expect(addressLiteral('example.com')).to.equal(null);
    expect(addressLiteral('1.example')).to.equal(null);
  });
});

describe('webhook retry schedule', () => {
  const fail = { status: 500, durationMs: 1 };
  it('follows the schedule, with up to 20 % jitter either way, then gives up', () => {
    const delays = [1_000, 2_000];
    expect(nextDelay(1, delays, 0.2, () => 0.5, fail)).to.equal(1_000);
    expect(nextDelay(1, delays, 0.2, () => 0, fail)).to.equal(800);
    expect(nextDelay(1, delays, 0.2, () => 0.999999, fail)).to.be.closeTo(1_200, 1);
    expect(nextDelay(2, delays, 0.2, () => 0.5, fail)).to.equal(2_000);
    expect(nextDelay(3, delays, 0.2, () => 0.5, fail)).to.equal(null);
  });

  it('honours Retry-After on 429 and 503 only, as a minimum, capped at 10 hours', () => {
    const delays = [1_000];
    expect(nextDelay(1, delays, 0, () => 0.5, { status: 429, retryAfterMs: 60_000, durationMs: 1 })).to.equal(60_000);
    expect(nextDelay(1, delays, 0, () => 0.5, { status: 503, retryAfterMs: 10, durationMs: 1 })).to.equal(1_000);
    expect(nextDelay(1, delays, 0, () => 0.5, { status: 500, retryAfterMs: 60_000, durationMs: 1 })).to.equal(1_000);
    expect(nextDelay(1, delays, 0, () => 0.5, { status: 429, retryAfterMs: 1e9, durationMs: 1 })).to.equal(36_000_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = new Date('2026-01-15T12:00:00Z');
    expect(parseRetryAfter('120', now)).to.equal(120_000);
    expect(parseRetryAfter('Thu, 15 Jan 2026 12:01:00 GMT', now)).to.equal(60_000);
    expect(parseRetryAfter('soon', now)).to.equal(undefined);
    expect(parseRetryAfter(undefined, now)).to.equal(undefined);
  });

  it('defaults to 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(DEFAULT_RETRY_DELAYS_MS).to.deep.equal([5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
    expect(parseDurations('500ms, 1s,5m,2h,1d')).to.deep.equal([500, 1_000, 300_000, 7_200_000, 86_400_000]);
  });
});

describe('webhook operator settings (config.ts)', () => {
  it('reads WEBHOOK_ALLOWED_CIDRS, WEBHOOK_RETRY_DELAYS, WEBHOOK_TIMEOUT_MS and WEBHOOK_MAX_DEFER_MS, with the defaults when unset', () => {
    const defaults = loadConfig({}).webhooks;
    expect(defaults.retryDelaysMs).to.deep.equal(DEFAULT_RETRY_DELAYS_MS);
    expect(defaults.timeoutMs).to.equal(15_000);
    expect(defaults.allowedCidrs).to.deep.equal([]);
    expect(defaults.maxDeferMs).to.equal(5_000);
    const set = loadConfig({
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      WEBHOOK_RETRY_DELAYS: '1s,2s,5s',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_MAX_DEFER_MS: '0',
    }).webhooks;
    expect(set.retryDelaysMs).to.deep.equal([1_000, 2_000, 5_000]);
    expect(set.timeoutMs).to.equal(2_000);
    expect(set.maxDeferMs).to.equal(0);
    expect(refusedRange('127.0.0.1', set.allowedCidrs)).to.equal(null);
  });

  it('refuses what it cannot read with a clear start-up error', () => {
    expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/33' })).to.throw(
      /WEBHOOK_ALLOWED_CIDRS: "10.0.0.0\/33"/,
    );
    expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS: '1s,soon' })).to.throw(
      /WEBHOOK_RETRY_DELAYS: "soon" is not a duration/,
    );
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: '0' })).to.throw(/WEBHOOK_TIMEOUT_MS must be between 1 and 60000/);
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: 'x' })).to.throw(/WEBHOOK_TIMEOUT_MS/);
    expect(() => loadConfig({ WEBHOOK_MAX_DEFER_MS: '60001' })).to.throw(
      /WEBHOOK_MAX_DEFER_MS must be between 0 and 60000/,
    );
    expect(() => loadConfig({ WEBHOOK_MAX_DEFER_MS: '5s' })).to.throw(/WEBHOOK_MAX_DEFER_MS/);
  });
});

describe('webhook delivery ids', () => {
  const DELIVERY_ID = /^msg_[A-Za-z0-9]{1,64}$/; // what the API accepts (routes/webhooks.ts)

  it('are the same for the same event and endpoint, and differ between endpoints and events', () => {
    const [a, b] = [eventIdOf({ id: eventId() }), eventIdOf({ id: eventId() })];
    expect(deliveryIdOf(a, 'we_1')).to.equal(deliveryIdOf(a, 'we_1'));
    const ids = new Set([deliveryIdOf(a, 'we_1'), deliveryIdOf(a, 'we_2'), deliveryIdOf(b, 'we_1')]);
    expect(ids.size).to.equal(3);
    for (const id of ids) expect(id).to.match(DELIVERY_ID);
  });

  it('sort in the order of their events (the primary-key index grows at its right edge)', () => {
    const events = Array.from({ length: 5_000 }, () => eventIdOf({ id: eventId() }));
    const ids = events.map((e, i) => deliveryIdOf(e, `we_${i % 7}`));
    expect([...ids].sort()).to.deep.equal(ids);
  });

  it('of a test event match the API pattern', () => {
    expect(deliveryIdOf('evt_test_AbC123xyz', 'we_1')).to.match(DELIVERY_ID);
  });
});
