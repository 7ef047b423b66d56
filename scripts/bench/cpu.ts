/** CPU counters of the bench (Linux /proc; null elsewhere), and waiting for a quiet machine. */
import fs from 'node:fs';
import { sleep } from '../lib/processes.ts';

/** utime and stime in seconds of a /proc `stat` file (a process's, or one thread's under `task/`); throws if unreadable. */
export const statTimes = (statFile: string): { user: number; kernel: number } => {
  const stat = fs.readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, kernel: Number(fields[12]) / 100 }; // USER_HZ is 100 on Linux
};

/** utime + stime in seconds of a /proc `stat` file (a process's, or one thread's under `task/`); throws if unreadable. */
export const statCpuSeconds = (statFile: string): number => {
  const { user, kernel } = statTimes(statFile);
  return user + kernel;
};

/** utime + stime of a process in seconds (Linux /proc; null elsewhere). */
export const processCpuSeconds = (pid: number | undefined): number | null => {
  if (pid === undefined) return null;
  try {
    return statCpuSeconds(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
};

/**
 * The bench's name of thread `tid` of process `pid`: the name the service's worker threads give
 * themselves (src/infrastructure/threadIdentity.ts); the process's first thread is `main`, unnamed
 * others (Node's own, named `node`) are `other`. Throws when the thread has ended. Linux /proc.
 */
export const threadName = (pid: number, tid: string): string => {
  const comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
  return Number(tid) === pid ? 'main' : comm === 'node' ? 'other' : comm;
};

/** A thread's CPU seconds: `cpu` is utime + stime, `kernel` the stime alone. */
export interface ThreadTimes {
  cpu: number;
  kernel: number;
}

/**
 * CPU seconds of each of a process's threads, summed by thread name (`threadName`); the kernel's
 * part is the system calls (a commit's `fsync`, the WAL's and the sockets' writes) and the kernel
 * work they do on the thread. Linux /proc; null elsewhere.
 */
export const threadTimes = (pid: number | undefined): Map<string, ThreadTimes> | null => {
  if (pid === undefined) return null;
  try {
    const byName = new Map<string, ThreadTimes>();
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      let name: string;
      let times: { user: number; kernel: number };
      try {
        name = threadName(pid, tid);
        times = statTimes(`/proc/${pid}/task/${tid}/stat`);
      } catch {
        continue; // the thread ended meanwhile
      }
      const sum = byName.get(name) ?? { cpu: 0, kernel: 0 };
      byName.set(name, { cpu: sum.cpu + times.user + times.kernel, kernel: sum.kernel + times.kernel });
    }
    return byName;
  } catch {
    return null;
  }
};

/** utime + stime in seconds of each of a process's threads, summed by thread name (threadTimes). */
export const threadCpuSeconds = (pid: number | undefined): Map<string, number> | null => {
  const times = threadTimes(pid);
  return times && new Map([...times].map(([name, t]) => [name, t.cpu]));
};

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat; null elsewhere. */
export const machineCpuSeconds = (): number | null => {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
  } catch {
    return null;
  }
};

/** Bytes of the page cache not yet on the disk (Dirty + Writeback in /proc/meminfo); null elsewhere. */
export const unwrittenBytes = (): number | null => {
  try {
    const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(meminfo)?.[1] ?? 0);
    return (kib('Dirty') + kib('Writeback')) * 1024;
  } catch {
    return null;
  }
};

/** Unwritten bytes under which the disk counts as quiet (`waitForDisk`), and the longest wait for it. */
export const DISK_QUIET_BYTES = 4 * 1024 * 1024;
export const DISK_WAIT_LIMIT_MS = 5_000;

/**
 * A target that writes leaves writes behind it: the last commits of a file at synchronous=NORMAL
 * stay in the page cache until its idle checkpoint syncs them a second later, and the kernel
 * writes back the rest. Before the next measurement, wait until less than `bytes` are left
 * unwritten (at most `limitMs`), so that one target's leftovers do not land on the fsyncs of the
 * next. Resolves with the time waited, and whether the disk got there.
 */
export const waitForDisk = async (
  bytes = DISK_QUIET_BYTES,
  limitMs = DISK_WAIT_LIMIT_MS,
): Promise<{ waitedMs: number; quiet: boolean }> => {
  const started = Date.now();
  for (;;) {
    const left = unwrittenBytes();
    const waitedMs = Date.now() - started;
    if (left === null || left < bytes) return { waitedMs, quiet: true };
    if (waitedMs >= limitMs) return { waitedMs, quiet: false };
    await sleep(100);
  }
};

/**
 * Other sessions may be using the machine: before a measurement, wait (from a budget shared by
 * the whole run) for half a second in which the machine is almost idle. Best effort.
 */
let quietBudgetMs = 10_000;
export const waitForQuiet = async (): Promise<{ waitedMs: number; quiet: boolean }> => {
  const started = Date.now();
  for (;;) {
    const before = machineCpuSeconds();
    if (before === null) return { waitedMs: 0, quiet: true };
    await sleep(500);
    const busyCores = ((machineCpuSeconds() ?? before) - before) / 0.5;
    const waitedMs = Date.now() - started;
    if (busyCores < 0.25) return { waitedMs, quiet: true };
    if (waitedMs >= quietBudgetMs) {
      quietBudgetMs = 0;
      return { waitedMs, quiet: false };
    }
    quietBudgetMs -= 500;
  }
};

/** One figure of threadTimes per thread name between two readings; null without both. */
const threadDeltas = (
  before: Map<string, ThreadTimes> | null,
  after: Map<string, ThreadTimes> | null,
  figure: keyof ThreadTimes,
): Record<string, number> | null =>
  before && after
    ? Object.fromEntries([...after].map(([name, t]) => [name, t[figure] - (before.get(name)?.[figure] ?? 0)]))
    : null;

/**
 * Starts the CPU counters of this process (the load generator), the server and the machine;
 * `stop()` reads them again: CPU over wall time (1.0 = one core busy), and the measured window
 * in µs of the monotonic clock (to cut CPU profiles).
 */
export const startCpuMeter = (serverPid: number | undefined) => {
  const cpuBefore = process.cpuUsage();
  const serverBefore = processCpuSeconds(serverPid);
  const threadsBefore = threadTimes(serverPid);
  const machineBefore = machineCpuSeconds();
  const started = process.hrtime.bigint();
  return () => {
    const ended = process.hrtime.bigint();
    const wall = Number(ended - started) / 1e9;
    const cpu = process.cpuUsage(cpuBefore);
    const serverAfter = processCpuSeconds(serverPid);
    const threadsAfter = threadTimes(serverPid);
    const machineAfter = machineCpuSeconds();
    const loadGenCpu = (cpu.user + cpu.system) / 1e6 / wall;
    const serverCpu = serverBefore !== null && serverAfter !== null ? (serverAfter - serverBefore) / wall : null;
    const machineCpu = machineBefore !== null && machineAfter !== null ? (machineAfter - machineBefore) / wall : null;
    return {
      window: { fromUs: Number(started / 1000n), toUs: Number(ended / 1000n) },
      loadGenCpu,
      serverCpu,
      serverCpuSeconds: serverCpu === null ? null : serverCpu * wall,
      /** CPU seconds of the server's threads by name (see threadTimes). */
      serverThreadCpuSeconds: threadDeltas(threadsBefore, threadsAfter, 'cpu'),
      /** Of those, the seconds spent in the kernel (stime). */
      serverThreadKernelSeconds: threadDeltas(threadsBefore, threadsAfter, 'kernel'),
      otherCpu: machineCpu !== null && serverCpu !== null ? Math.max(0, machineCpu - serverCpu - loadGenCpu) : null,
    };
  };
};
