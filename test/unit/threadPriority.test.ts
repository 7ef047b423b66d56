/** Background threads lower their own scheduling priority (src/infrastructure/threadPriority.ts; Linux). */
import fs from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { BACKGROUND_THREAD_NICE } from '../../src/infrastructure/threadPriority.ts';

const MODULE = new URL('../../src/infrastructure/threadPriority.ts', import.meta.url).href;

/** The nice value of each of this process's threads (field 19 of /proc/self/task/<tid>/stat). */
const threadNices = (): number[] =>
  fs.readdirSync('/proc/self/task').map((tid) => {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });

describe('background thread priority', function () {
  before(function () {
    if (process.platform !== 'linux') this.skip(); // per-thread priorities are Linux's; elsewhere nothing changes
  });

  it('a worker thread lowers its own priority to the background nice value; the other threads keep theirs', async function () {
    const mainBefore = os.getPriority();
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const fs = require('node:fs');
       import('tsx/esm/api').then((api) => { api.register(); return import(${JSON.stringify(MODULE)}); }).then((m) => {
         const lowered = m.lowerThisThreadPriority();
         const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
         parentPort.postMessage({ lowered, nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) });
       });`,
      { eval: true },
    );
    try {
      const seen = await new Promise<{ lowered: boolean; nice: number }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(seen).to.deep.equal({ lowered: true, nice: BACKGROUND_THREAD_NICE });
      expect(os.getPriority()).to.equal(mainBefore);
    } finally {
      await worker.terminate();
    }
  });

  it('the WAL checkpointer thread runs at the background nice value', async function () {
    const { checkpointer } = await import('../../src/infrastructure/sqliteWal.ts');
    await checkpointer.checkpointNow(); // starts it if no store did yet
    expect(threadNices()).to.include(BACKGROUND_THREAD_NICE);
  });
});
