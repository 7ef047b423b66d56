/**
 * Where the documentation once said something the code does not do: the order of the checks
 * before a body is read (the key comes first; unknown paths are not asked for one) and which
 * answers carry rate limit headers; and links to files a clone does not have.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { defaultRateLimitConfig } from '../../src/http/rateLimits.ts';
import { TestService } from '../support/harness.ts';
import { ROOT } from '../support/processes.ts';

const BAD_KEY = 'sk_test_NoSuchKey000000000000000000000';
const JSON_TYPE = { 'Content-Type': 'application/json' };

describe('the documented order of checks, against the code', () => {
  let service: TestService;
  before(async () => {
    service = await TestService.start({ rateLimits: defaultRateLimitConfig() });
  });
  after(async () => {
    await service.stop();
  });

  it('a bad or missing key with an unreadable body: 401 (the key is checked before the body), no rate limit headers', async () => {
    const answers = [
      await service.post('/v1/vouchers', undefined, { key: BAD_KEY, raw: '{"code":', headers: JSON_TYPE }),
      await service.post('/v1/vouchers', undefined, { key: null, raw: '{"code":', headers: JSON_TYPE }),
      await service.post('/v1/vouchers', undefined, {
        key: BAD_KEY,
        raw: 'code=X',
        headers: { 'Content-Type': 'text/plain' },
      }),
    ];
    expect(answers.map((r) => [r.status, r.body.error.code])).to.deep.equal([
      [401, 'INVALID_API_KEY'],
      [401, 'MISSING_API_KEY'],
      [401, 'INVALID_API_KEY'],
    ]);
    for (const res of answers) expect(res.headers.get('X-RateLimit-Limit')).to.equal(null);
  });

  it('a good key with an unreadable body: 400/415 carrying the rate limit headers, and counted', async () => {
    const first = await service.post('/v1/vouchers/validate', undefined, { raw: '{"code":', headers: JSON_TYPE });
    const second = await service.post('/v1/vouchers/validate', undefined, {
      raw: 'code=X',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect([first.status, second.status]).to.deep.equal([400, 415]);
    expect([first, second].map((r) => r.headers.get('X-RateLimit-Remaining'))).to.deep.equal(['199', '198']);
  });

  it('an unknown /v1 path without a key: 404 NOT_FOUND, not 401', async () => {
    const res = await service.get('/v1/no-such-endpoint', { key: null });
    expect(res.status).to.equal(404);
    expect(res.body.error.code).to.equal('NOT_FOUND');
  });
});

describe('links in the documentation', () => {
  const SKIP = new Set(['node_modules', '.git', 'dist', 'data', '.bench', '.tmp', 'coverage', 'test-artifacts']);
  const markdownFiles = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      if (SKIP.has(entry.name) || entry.isSymbolicLink()) return [];
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return markdownFiles(full);
      return entry.name.endsWith('.md') ? [full] : [];
    });
  const inside = (target: string) => !path.relative(ROOT, target).startsWith('..');

  it('every relative link and every ../ path named in a Markdown file is a file of this repository', () => {
    const files = markdownFiles(ROOT);
    expect(files.map((f) => path.relative(ROOT, f))).to.include.members(['README.md', 'docs/api-reference.md']);
    const broken: string[] = [];
    for (const file of files) {
      const text = fs.readFileSync(file, 'utf8');
      const where = (target: string) => `${path.relative(ROOT, file)} → ${target}`;
      for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(link!)) continue;
        const target = path.resolve(path.dirname(file), decodeURI(link!.split('#')[0]!));
        if (!inside(target) || !fs.existsSync(target)) broken.push(where(link!));
      }
      // paths written as text or code, e.g. `../shared/spec/decisions.md`
      for (const [mention] of text.matchAll(/(?:\.\.\/)+[\w.-]+(?:\/[\w.-]+)*/g)) {
        if (!inside(path.resolve(path.dirname(file), mention))) broken.push(where(mention));
      }
    }
    expect(broken).to.deep.equal([]);
  });
});
