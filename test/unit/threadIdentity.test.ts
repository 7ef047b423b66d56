/** Thread names and priorities (src/infrastructure/threadIdentity.ts), seen from /proc as the operator sees them. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import os from 'node:os';
import path from 'node:path';
import { openEmbedded } from '../../src/composition.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { nameThread } from '../../src/infrastructure/threadIdentity.ts';
import { createLogger } from '../../src/logger.ts';
import { until } from '../support/webhookReceiver.ts';

const MODULE = new URL('../../src/infrastructure/threadIdentity.ts', import.meta.url).href;

/** Runs `body` (with `identity`, the module) in a worker thread; resolves with what it posts and its task id. */
const inWorker = async (body: string): Promise<{ tid: number; result: unknown }> => {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     import('tsx/esm/api').then(async (api) => {
       api.register();
       const identity = await import(${JSON.stringify(MODULE)});
       const fs = require('node:fs');
       const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
       const result = await (async () => { ${body} })();
       parentPort.postMessage({ tid, result });
       await new Promise((resolve) => parentPort.once('message', resolve));
     });`,
    { eval: true },
  );
  try {
    const [message] = (await once(worker, 'message')) as [{ tid: number; result: unknown }];
    // read while the thread still runs: its /proc entry goes with it
    return { ...message, result: { posted: message.result, ...readTask(message.tid) } };
  } finally {
    worker.postMessage('end');
    await once(worker, 'exit');
  }
};

/** Linux's idle scheduling class, as `policy` (field 41 of a task's stat) reads it. */
const SCHED_IDLE = 5;

/** Whether `chrt` (util-linux) can be run here: the idle class is set through it. */
const hasChrt = spawnSync('chrt', ['--version']).status === 0;

/** The thread's name, nice value and scheduling policy, from /proc/self/task/<tid>. */
const readTask = (tid: number): { comm: string; nice: number; policy: number } => {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    comm: fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(),
    nice: Number(fields[16]), // field 19 of stat; fields[0] is field 3
    policy: Number(fields[38]), // field 41
  };
};

/** The calling thread's name and nice value. */
const callingTask = () => readTask(Number(fs.readlinkSync('/proc/thread-self').split('/').pop()));

describe('thread identity', function () {
  this.timeout(30_000);

  if (process.platform !== 'linux') {
    it('names nothing off Linux', () => expect(nameThread('anything')).to.equal(false));
    return;
  }

  it('names the calling thread only, cut to 15 bytes', async () => {
    const mainComm = fs.readFileSync('/proc/thread-self/comm', 'utf8');
    const { result } = await inWorker(`return identity.nameThread('proj-production-and-more');`);
    expect(result).to.deep.include({ posted: true, comm: 'proj-production' });
    expect(fs.readFileSync('/proc/thread-self/comm', 'utf8')).to.equal(mainComm);
  });

  it('lowers the calling thread priority only', async () => {
    const mainNice = callingTask().nice;
    const { result } = await inWorker(`identity.lowerThreadPriority(${mainNice + 3}); return 'lowered';`);
    expect(result).to.deep.include({ posted: 'lowered', nice: mainNice + 3 });
    expect(callingTask().nice).to.equal(mainNice);
  });

  it('puts the calling thread only in the idle scheduling class, where chrt is installed', async () => {
    const main = callingTask();
    const { result } = await inWorker(`return identity.idleThreadClass();`);
    expect(result).to.deep.include(hasChrt ? { posted: true, policy: SCHED_IDLE } : { posted: false });
    expect(callingTask().policy).to.equal(main.policy);
  });

  it('an embedded service names its worker threads; the webhook threads run in the idle class (at nice 10 without chrt), the snapshot writer at nice 10', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'thread-names-'));
    const service = await openEmbedded({ dataDir, clock: systemClock, logger: createLogger('silent') });
    try {
      const expected = [
        'proj-production',
        'proj-sandbox',
        'wh-production',
        'wh-sandbox',
        'sqlite-writer',
        'snapshot-writer',
      ];
      let threads: ReturnType<typeof readTask>[] = [];
      // a thread names itself once its modules are loaded, which may be after the service has opened
      await until(
        () => {
          threads = fs.readdirSync('/proc/self/task').map((tid) => readTask(Number(tid)));
          return expected.every((n) => threads.some((t) => t.comm === n));
        },
        `the threads ${expected.join(', ')} to name themselves`,
        5_000,
      );
      const names = threads.map((t) => t.comm);
      for (const name of expected) expect(names, name).to.include(name);
      const mainNice = callingTask().nice;
      const mainPolicy = callingTask().policy;
      // a webhook thread sets its class once its modules are loaded, after it names itself
      await until(
        () =>
          fs
            .readdirSync('/proc/self/task')
            .map((tid) => readTask(Number(tid)))
            .filter((t) => t.comm.startsWith('wh-'))
            .every((t) => (hasChrt ? t.policy === SCHED_IDLE : t.nice === Math.max(10, mainNice))),
        'the webhook threads to lower their priority',
        5_000,
      );
      for (const t of threads.filter((t) => t.comm === 'snapshot-writer')) {
        expect(t.nice, t.comm).to.equal(Math.max(10, mainNice));
        expect(t.policy, t.comm).to.equal(mainPolicy);
      }
      for (const t of threads.filter((t) => t.comm.startsWith('proj-'))) {
        expect(t.nice).to.equal(mainNice);
        expect(t.policy).to.equal(mainPolicy);
      }
    } finally {
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
