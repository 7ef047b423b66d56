import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A file path in a directory of its own, made before each test of the calling suite and removed
 * with everything in it after the test. Call it inside `describe`; the returned function gives
 * the current test's path.
 */
export const tempFileEach = (prefix: string, name: string): (() => string) => {
  let dir = '';
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  return () => path.join(dir, name);
};
