import type { SnapshotStore, StoredEntry } from '../../core/snapshotStore.ts';

/** Snapshots in this process's memory: for tests of the handler and the contract suite. */
export class MemorySnapshotStore implements SnapshotStore {
  private readonly cores = new Map<string, { revision: number; core: string }>();
  private readonly stored = new Map<string, Map<string, { value: string; revision: number }>>();

  load(streamId: string): Promise<{ revision: number; core: unknown } | undefined> {
    const found = this.cores.get(streamId);
    return Promise.resolve(found && { revision: found.revision, core: JSON.parse(found.core) as unknown });
  }

  entries(streamId: string, keys: readonly string[]): Promise<Map<string, StoredEntry>> {
    const mine = this.stored.get(streamId);
    const found = new Map<string, StoredEntry>();
    for (const key of keys) {
      const entry = mine?.get(key);
      if (entry) found.set(key, { value: JSON.parse(entry.value) as unknown, revision: entry.revision });
    }
    return Promise.resolve(found);
  }

  save(
    streamId: string,
    base: number,
    revision: number,
    core: unknown,
    entries: ReadonlyArray<readonly [string, unknown]>,
  ): Promise<boolean> {
    if ((this.cores.get(streamId)?.revision ?? -1) !== base) return Promise.resolve(false);
    this.cores.set(streamId, { revision, core: JSON.stringify(core) });
    let mine = this.stored.get(streamId);
    if (!mine) this.stored.set(streamId, (mine = new Map()));
    for (const [key, value] of entries) mine.set(key, { value: JSON.stringify(value ?? null), revision });
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
