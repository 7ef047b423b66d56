import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/**
 * A CommonJS package loaded on first use instead of when the module naming it is: the clients of
 * the servers (mongodb, @eventstore/db-client, kafkajs) and exceljs take about 55 MB of a process
 * that loads them, and most processes use none of them (decision 064). The package is the one
 * `import` would give: Node's module cache holds one copy of a CommonJS package for both.
 */
export const lazyPackage = <T>(name: string): (() => T) => {
  let loaded: T | undefined;
  return () => (loaded ??= requireHere(name) as T);
};
