/** --profile: the children's --cpu-prof flags, and the summary of each measured part of their profiles. */
import fs from 'node:fs';
import path from 'node:path';
import { PROFILE, ROOT, SERVICE_ROOT } from './cli.ts';
import {
  busyMsIn,
  formatSummary,
  loadProfile,
  summariseProfile,
  type ProfileSummary,
  type ProfileWindow,
} from './profile.ts';

export const PROF_DIR = path.join(ROOT, '.bench', 'prof');

/** Measured parts, in µs of the monotonic clock (see ProfileWindow), and their request counts. */
export type Windows = Record<string, ProfileWindow & { requests: number }>;

/** With --profile: an empty .bench/prof/ with a folder per child. */
export const prepareProfDir = (): void => {
  if (!PROFILE) return;
  fs.rmSync(PROF_DIR, { recursive: true, force: true });
  fs.mkdirSync(path.join(PROF_DIR, 'ceiling'), { recursive: true });
  fs.mkdirSync(path.join(PROF_DIR, 'service'), { recursive: true });
};

/** Node flags of the child `name` ('ceiling' or 'service'). */
export const cpuProf = (name: string): string[] =>
  PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(PROF_DIR, name)}`] : [];

/**
 * The profiles of the child `name`: its main thread's, and its worker threads' (Node names them
 * CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; the main thread is thread 0).
 */
const profilesOf = (name: string) => {
  const files = fs.readdirSync(path.join(PROF_DIR, name)).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => f.split('.').at(-3) === '0');
  if (!main) throw new Error(`no CPU profile was written by the ${name} child`);
  return {
    main: loadProfile(path.join(PROF_DIR, name, main)),
    workers: files.filter((f) => f !== main).map((f) => loadProfile(path.join(PROF_DIR, name, f))),
  };
};

/** Summarises and prints the profile of every measured part (the children have exited). */
export const reportProfiles = (windows: Windows, log: (msg: string) => void): Record<string, ProfileSummary> => {
  const profiles: Record<string, ProfileSummary> = {};
  const ceilingProfile = profilesOf('ceiling').main;
  const service = profilesOf('service');
  const serviceProfile = service.main;
  log(`\nCPU profiles (measured seconds only; profiling slows the servers down): ${path.relative(ROOT, PROF_DIR)}/`);
  for (const [id, { requests, ...window }] of Object.entries(windows)) {
    profiles[id] = summariseProfile(
      id === 'ceiling' ? ceilingProfile : serviceProfile,
      id === 'ceiling' ? ROOT : SERVICE_ROOT,
      window,
      requests,
    );
    if (id !== 'ceiling')
      profiles[id]!.otherThreadsBusyMs = service.workers.map((w) => Math.round(busyMsIn(w, window) / 1000));
  }
  for (const id of Object.keys(windows)) {
    log(`\n${id}:`);
    for (const line of formatSummary(profiles[id]!, id === 'ceiling' ? undefined : profiles.ceiling)) log(line);
  }
  return profiles;
};
