import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, rateLimitsFrom } from '../../src/config.ts';
import { DEFAULT_RATE_LIMITS, RATE_LIMIT_GROUPS } from '../../src/http/rateLimits.ts';

describe('rate limit configuration (RATE_LIMITS, RATE_LIMITS_FILE)', () => {
  let dir: string;
  const file = (name: string, text: string): string => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  };
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rate-limits-'));
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('defaults to the spec: 1-minute window, read 100, create 50, validate 200, apply 100, analytics 100 / customers 50, export 10, other 100', () => {
    expect(loadConfig({}).rateLimits).to.deep.equal({
      enabled: true,
      windowMs: 60_000,
      limits: {
        read: 100,
        create: 50,
        validate: 200,
        apply: 100,
        performance: 100,
        trends: 100,
        customers: 50,
        export: 10,
        other: 100,
      },
    });
    expect(rateLimitsFrom({ RATE_LIMITS: '', RATE_LIMITS_FILE: '' })).to.deep.equal(loadConfig({}).rateLimits);
  });

  it('does not share the defaults: changing one config leaves the next alone', () => {
    const first = rateLimitsFrom({ RATE_LIMITS: '{"read": 7}' });
    expect(first).to.have.nested.property('limits.read', 7);
    expect(rateLimitsFrom({})).to.have.nested.property('limits.read', 100);
    expect(DEFAULT_RATE_LIMITS.read).to.equal(100);
  });

  it('off (any case, spaces around) turns limiting off, whatever RATE_LIMITS_FILE says', () => {
    expect(rateLimitsFrom({ RATE_LIMITS: 'off' })).to.deep.equal({ enabled: false });
    expect(rateLimitsFrom({ RATE_LIMITS: ' OFF ' })).to.deep.equal({ enabled: false });
    expect(rateLimitsFrom({ RATE_LIMITS: 'off', RATE_LIMITS_FILE: path.join(dir, 'missing.json') })).to.deep.equal({
      enabled: false,
    });
  });

  it('takes per-group overrides and window_ms from RATE_LIMITS; groups left out keep their defaults', () => {
    expect(rateLimitsFrom({ RATE_LIMITS: '{"validate": 1000, "apply": 500, "window_ms": 1000}' })).to.deep.equal({
      enabled: true,
      windowMs: 1000,
      limits: { ...DEFAULT_RATE_LIMITS, validate: 1000, apply: 500 },
    });
    expect(rateLimitsFrom({ RATE_LIMITS: '{}' })).to.deep.equal(rateLimitsFrom({}));
  });

  it('reads RATE_LIMITS_FILE, and lays RATE_LIMITS over it', () => {
    const p = file('limits.json', JSON.stringify({ export: 20, other: 300, window_ms: 120_000 }));
    expect(rateLimitsFrom({ RATE_LIMITS_FILE: p })).to.deep.equal({
      enabled: true,
      windowMs: 120_000,
      limits: { ...DEFAULT_RATE_LIMITS, export: 20, other: 300 },
    });
    expect(rateLimitsFrom({ RATE_LIMITS_FILE: p, RATE_LIMITS: '{"other": 5}' })).to.deep.equal({
      enabled: true,
      windowMs: 120_000,
      limits: { ...DEFAULT_RATE_LIMITS, export: 20, other: 5 },
    });
  });

  it('knows every group the routes use', () => {
    const all = Object.fromEntries(RATE_LIMIT_GROUPS.map((g, i) => [g, i + 1]));
    expect(rateLimitsFrom({ RATE_LIMITS: JSON.stringify(all) })).to.deep.equal({
      enabled: true,
      windowMs: 60_000,
      limits: all,
    });
  });

  describe('refuses to start on a mistake, naming it', () => {
    const refuses = (env: NodeJS.ProcessEnv, ...patterns: RegExp[]) => {
      let message = '';
      try {
        loadConfig(env);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, 'loadConfig should have thrown').to.not.equal('');
      for (const p of patterns) expect(message).to.match(p);
    };

    it('an unknown group', () => {
      refuses(
        { RATE_LIMITS: '{"validate": 10, "vaildate": 10}' },
        /RATE_LIMITS/,
        /unknown rate limit group "vaildate"/,
        /validate/,
      );
    });

    it('a limit or window that is not a positive integer', () => {
      refuses({ RATE_LIMITS: '{"apply": 0}' }, /RATE_LIMITS/, /"apply" must be a positive integer, got 0/);
      refuses({ RATE_LIMITS: '{"apply": -5}' }, /"apply" must be a positive integer, got -5/);
      refuses({ RATE_LIMITS: '{"apply": 1.5}' }, /"apply" must be a positive integer, got 1.5/);
      refuses({ RATE_LIMITS: '{"apply": "100"}' }, /"apply" must be a positive integer, got "100"/);
      refuses({ RATE_LIMITS: '{"apply": null}' }, /"apply" must be a positive integer, got null/);
      refuses({ RATE_LIMITS: '{"window_ms": 0}' }, /"window_ms" must be a positive integer/);
      refuses({ RATE_LIMITS: '{"window_ms": 4294967296}' }, /"window_ms" must be at most 2147483647/);
    });

    it('RATE_LIMITS that is neither off nor a JSON object', () => {
      refuses({ RATE_LIMITS: 'on' }, /RATE_LIMITS is neither "off" nor valid JSON/);
      refuses({ RATE_LIMITS: '{"apply": 1' }, /RATE_LIMITS is neither "off" nor valid JSON/);
      refuses({ RATE_LIMITS: '[100]' }, /RATE_LIMITS must be a JSON object/);
      refuses({ RATE_LIMITS: '100' }, /RATE_LIMITS must be a JSON object/);
      refuses({ RATE_LIMITS: 'null' }, /RATE_LIMITS must be a JSON object/);
    });

    it('a RATE_LIMITS_FILE that is missing, not JSON, or wrong', () => {
      const missing = path.join(dir, 'nope.json');
      refuses(
        { RATE_LIMITS_FILE: missing },
        /RATE_LIMITS_FILE/,
        new RegExp(missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
        /cannot be read/,
      );
      refuses(
        { RATE_LIMITS_FILE: file('broken.json', '{"read": ') },
        /RATE_LIMITS_FILE .*broken\.json is not valid JSON/,
      );
      refuses(
        { RATE_LIMITS_FILE: file('unknown.json', '{"exports": 5}') },
        /RATE_LIMITS_FILE .*unknown\.json: unknown rate limit group "exports"/,
      );
      refuses({ RATE_LIMITS_FILE: file('off.json', '"off"') }, /RATE_LIMITS_FILE .*off\.json must be a JSON object/);
    });
  });
});
