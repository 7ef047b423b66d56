/**
 * Memo of the customer-derived figures of a window (unique customers, repeat usage), which cost a
 * read of every customer doc active in the window. It is exact, not a TTL cache: every event that
 * changes a customer's uses on a day (an application, a rollback) also rewrites the voucher's daily
 * doc of that day, in the same transaction. So while the window's daily docs (always read, at most
 * 90) carry the same positions, the customers' uses in the window are unchanged too.
 */
export class WindowMemo<V> {
  private readonly entries = new Map<string, { stamp: string; value: V }>();
  constructor(private readonly capacity = 1_000) {}

  async get(key: string, stamp: string, compute: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.stamp === stamp) {
      this.entries.delete(key);
      this.entries.set(key, hit); // most recently used last
      return hit.value;
    }
    const value = await compute();
    this.entries.delete(key);
    this.entries.set(key, { stamp, value });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}

/** The stamp of a window: every daily doc's id and last position. */
export const stampOf = (docs: Iterable<{ id: string; _position?: unknown }>): string =>
  [...docs].map((d) => `${d.id}@${String(d._position ?? 0)}`).join(',');
