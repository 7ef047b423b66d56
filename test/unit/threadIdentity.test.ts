/** Thread names and priorities (src/infrastructure/threadIdentity.ts), seen from /proc as the operator sees them. */
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

/** The thread's name and nice value, from /proc/self/task/<tid>. */
const readTask = (tid: number): { comm: string; nice: number } => {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    comm: fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(),
    nice: Number(fields[16]), // field 19 of stat; fields[0] is field 3
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

  it('an embedded service names its worker threads; the webhook and snapshot writer threads run at nice 10', async () => {
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
      for (const t of threads.filter((t) => t.comm.startsWith('wh-') || t.comm === 'snapshot-writer'))
        expect(t.nice, t.comm).to.equal(Math.max(10, mainNice));
      for (const t of threads.filter((t) => t.comm.startsWith('proj-'))) expect(t.nice).to.equal(mainNice);
    } finally {
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
