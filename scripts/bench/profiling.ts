/** --profile: the children's --cpu-prof flags, and the summary of each measured part of their profiles. */
import fs from 'node:fs';
import path from 'node:path';
import { PROFILE, ROOT, SERVICE_ROOT } from './cli.ts';
import { formatSummary, loadProfile, summariseProfile, type ProfileSummary, type ProfileWindow } from './profile.ts';

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

const profileOf = (name: string) => {
  const file = fs.readdirSync(path.join(PROF_DIR, name)).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no CPU profile was written by the ${name} child`);
  return loadProfile(path.join(PROF_DIR, name, file));
};

/** Summarises and prints the profile of every measured part (the children have exited). */
export const reportProfiles = (windows: Windows, log: (msg: string) => void): Record<string, ProfileSummary> => {
  const profiles: Record<string, ProfileSummary> = {};
  const ceilingProfile = profileOf('ceiling');
  const serviceProfile = profileOf('service');
  log(`\nCPU profiles (measured seconds only; profiling slows the servers down): ${path.relative(ROOT, PROF_DIR)}/`);
  for (const [id, { requests, ...window }] of Object.entries(windows)) {
    profiles[id] = summariseProfile(
      id === 'ceiling' ? ceilingProfile : serviceProfile,
      id === 'ceiling' ? ROOT : SERVICE_ROOT,
      window,
      requests,
    );
  }
  for (const id of Object.keys(windows)) {
    log(`\n${id}:`);
    for (const line of formatSummary(profiles[id]!, id === 'ceiling' ? undefined : profiles.ceiling)) log(line);
  }
  return profiles;
};
