/**
 * What the service tells its operator at start: where it answers, and on the first start the
 * secrets it made (the first API keys, the generated dashboard password), which exist nowhere
 * else (they are stored only as hashes).
 *
 * Secrets never go to the log stream: the JSON log lines go to stdout, which under Docker,
 * systemd or a log shipper is collected and kept. So the welcome box, secrets included, goes to
 * a terminal (stderr when it is one, else stdout when it is one); with no terminal the secrets are
 * appended to a file in DATA_DIR readable only by the service's user (0600), and the log says
 * where that file is, never what it holds (decision 023).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

export interface FirstKeys {
  sandbox: string;
  production: string;
}

export interface Welcome {
  /** The root URL the service is reached at (PUBLIC_BASE_URL or the listen address), without /v1. */
  root: string;
  /** The API keys this start created (first start only). */
  firstKeys?: FirstKeys;
  /** The dashboard password this start generated (first start without ADMIN_PASSWORD only). */
  adminPassword?: string;
}

/** The part of a stream the welcome needs (process.stdout / process.stderr, or a test's fake). */
export interface OutputStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export interface WelcomeOutput {
  stdout: OutputStream;
  stderr: OutputStream;
  dataDir: string;
  /** The service's log (never given a secret). */
  logger: Logger;
}

/** Where first-start secrets go when there is no terminal. */
export const secretsFile = (dataDir: string): string => path.join(dataDir, 'first-start-secrets.txt');

const RULE = '='.repeat(78);

const LOST_KEYS = [
  'API keys were shown on the first start. Lost them? Create one with `npm run keys -- create`,',
  'start with VOUCHER_API_KEYS=sk_test_<32 letters or digits> to accept a key of your own choosing,',
  'or use a fresh DATA_DIR to get new keys.',
];

const boxLines = ({ root, firstKeys, adminPassword }: Welcome): string[] => {
  const base = `${root}/v1`;
  const lines = firstKeys
    ? [
        'First start: these API keys were created. They are shown only now and stored only as hashes:',
        `  sandbox     ${firstKeys.sandbox}`,
        `  production  ${firstKeys.production}`,
        '',
        `Try:  curl -H "Authorization: Bearer ${firstKeys.sandbox}" ${base}/vouchers`,
      ]
    : [`Voucher service on ${base} (API reference: ${base}/openapi.json).`, ...LOST_KEYS];
  const dashboard = `${root}/dashboard`;
  lines.push(
    '',
    ...(adminPassword
      ? [
          `Dashboard (API keys): ${dashboard}`,
          `  operator password  ${adminPassword}`,
          'Shown only now and stored only as a hash. Set ADMIN_PASSWORD to choose your own instead.',
        ]
      : [`Dashboard (API keys): ${dashboard} (password: shown on the first start, or ADMIN_PASSWORD)`]),
  );
  return lines;
};

/** The terminal to show secrets on: stderr if it is one, else stdout if it is one, else none. */
export const terminalOf = (output: Pick<WelcomeOutput, 'stdout' | 'stderr'>): OutputStream | undefined =>
  output.stderr.isTTY === true ? output.stderr : output.stdout.isTTY === true ? output.stdout : undefined;

/**
 * Appends `text` to `file`, created 0600 (owner read and write only) and set to 0600 if it
 * existed with other bits; a symbolic link in its place is refused (O_NOFOLLOW).
 */
const appendPrivate = (file: string, text: string): void => {
  const { O_WRONLY, O_CREAT, O_APPEND, O_NOFOLLOW = 0 } = fs.constants;
  const fd = fs.openSync(file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
};

/** Shows the welcome: to a terminal when there is one, else secrets to a 0600 file and a log line naming it. */
export const showWelcome = (welcome: Welcome, output: WelcomeOutput): void => {
  const lines = boxLines(welcome);
  const hasSecrets = welcome.firstKeys !== undefined || welcome.adminPassword !== undefined;
  const file = secretsFile(output.dataDir);
  const terminal = terminalOf(output);
  if (terminal) {
    terminal.write(`\n${RULE}\n${lines.join('\n')}\n${RULE}\n\n`);
  } else if (hasSecrets) {
    try {
      appendPrivate(
        file,
        `# ${new Date().toISOString()}: the voucher service's first start (no terminal to show this on)\n${lines.join('\n')}\n\n`,
      );
      output.logger.warn(
        { secrets_file: file },
        'first start: the new API keys and/or dashboard password are in secrets_file (readable only by this user); store them safely, then delete the file',
      );
    } catch (error) {
      output.logger.error(
        { err: error, secrets_file: file },
        'first start: could not write secrets_file, so the new API keys and/or dashboard password are lost; create keys with `npm run keys -- create` and set ADMIN_PASSWORD',
      );
    }
  } else {
    output.logger.info({ api: `${welcome.root}/v1`, dashboard: `${welcome.root}/dashboard` }, LOST_KEYS.join(' '));
  }
  if (!hasSecrets && fs.existsSync(file)) {
    output.logger.warn(
      { secrets_file: file },
      'secrets_file still holds first-start secrets: delete it once they are stored safely',
    );
  }
};
