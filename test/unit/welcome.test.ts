/**
 * The first start's secrets (API keys, generated dashboard password) reach a terminal or a file
 * only the service's user can read, never the log stream.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { secretsFile, showWelcome, type OutputStream, type Welcome } from '../../src/welcome.ts';

const SANDBOX = 'sk_test_AbcdefghijklmnopqrstuvwxyzABCDEF';
const PRODUCTION = 'sk_live_AbcdefghijklmnopqrstuvwxyzABCDEF';
const PASSWORD = 'abcde-fghjk-mnpqr-stuvw';
const FIRST: Welcome = {
  root: 'http://localhost:3000',
  firstKeys: { sandbox: SANDBOX, production: PRODUCTION },
  adminPassword: PASSWORD,
};
const SECRETS = [SANDBOX, PRODUCTION, PASSWORD];

const stream = (isTTY: boolean) => {
  const chunks: string[] = [];
  const out: OutputStream & { text: () => string } = {
    isTTY,
    write: (text: string) => chunks.push(text),
    text: () => chunks.join(''),
  };
  return out;
};

/** A pino logger writing JSON lines into a string, as the service's logger writes to stdout. */
const capturedLogger = () => {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), text: () => text };
};

describe('first-start welcome and its secrets', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'welcome-'));
  });
  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('with stderr on a terminal: the box with the secrets on stderr only; nothing on stdout, no file, no log line', () => {
    const stdout = stream(false);
    const stderr = stream(true);
    const log = capturedLogger();
    showWelcome(FIRST, { stdout, stderr, dataDir, logger: log.logger });
    for (const secret of SECRETS) expect(stderr.text()).to.contain(secret);
    expect(stdout.text()).to.equal('');
    expect(log.text()).to.equal('');
    expect(fs.existsSync(secretsFile(dataDir))).to.equal(false);
  });

  it('with only stdout on a terminal: the box there', () => {
    const stdout = stream(true);
    const stderr = stream(false);
    showWelcome(FIRST, { stdout, stderr, dataDir, logger: capturedLogger().logger });
    for (const secret of SECRETS) expect(stdout.text()).to.contain(secret);
    expect(stderr.text()).to.equal('');
    expect(fs.existsSync(secretsFile(dataDir))).to.equal(false);
  });

  it('with no terminal: the secrets in a 0600 file in DATA_DIR, the log naming the file and holding no secret', () => {
    const stdout = stream(false);
    const stderr = stream(false);
    const log = capturedLogger();
    showWelcome(FIRST, { stdout, stderr, dataDir, logger: log.logger });
    expect(stdout.text() + stderr.text()).to.equal('');
    const file = secretsFile(dataDir);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    const content = fs.readFileSync(file, 'utf8');
    for (const secret of SECRETS) expect(content).to.contain(secret);
    const line = JSON.parse(log.text().trim()) as { secrets_file: string; msg: string };
    expect(line.secrets_file).to.equal(file);
    for (const secret of SECRETS) expect(log.text()).not.to.contain(secret);
  });

  it('appends to a file left from before and makes it 0600; refuses a symbolic link in its place', () => {
    const file = secretsFile(dataDir);
    fs.writeFileSync(file, 'earlier\n', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    showWelcome(
      { root: FIRST.root, adminPassword: PASSWORD },
      {
        stdout: stream(false),
        stderr: stream(false),
        dataDir,
        logger: capturedLogger().logger,
      },
    );
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.readFileSync(file, 'utf8')).to.match(/^earlier\n[\s\S]*operator password {2}abcde-fghjk-mnpqr-stuvw/);

    const elsewhere = path.join(dataDir, 'elsewhere.txt');
    fs.writeFileSync(elsewhere, '');
    fs.rmSync(file);
    fs.symlinkSync(elsewhere, file);
    const log = capturedLogger();
    showWelcome(FIRST, { stdout: stream(false), stderr: stream(false), dataDir, logger: log.logger });
    expect(fs.readFileSync(elsewhere, 'utf8')).to.equal('');
    expect(log.text()).to.contain('could not write secrets_file');
    for (const secret of SECRETS) expect(log.text()).not.to.contain(secret);
  });

  it('later starts (no secrets): a log line on how to get a key, and a reminder while the secrets file is there', () => {
    const log = capturedLogger();
    showWelcome({ root: FIRST.root }, { stdout: stream(false), stderr: stream(false), dataDir, logger: log.logger });
    expect(log.text()).to.contain('VOUCHER_API_KEYS').and.not.contain('secrets_file');
    fs.writeFileSync(secretsFile(dataDir), 'x', { mode: 0o600 });
    const again = capturedLogger();
    showWelcome({ root: FIRST.root }, { stdout: stream(false), stderr: stream(false), dataDir, logger: again.logger });
    expect(again.text()).to.contain('still holds first-start secrets');
  });
});
