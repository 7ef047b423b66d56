/**
 * Child of sqliteWal.test.ts: appends events to the event store at EVENTS_FILE, lets the
 * checkpointer copy them into the database file, appends more, prints `ready` once every append
 * was acknowledged, then waits to be killed.
 */
import { SqliteEventStore } from '../../src/infrastructure/eventStore/sqliteEventStore.ts';
import { checkpointer } from '../../src/infrastructure/sqliteWal.ts';

const store = SqliteEventStore.open(process.env.EVENTS_FILE!);
const append = (from: number, count: number) =>
  Promise.all(
    Array.from({ length: count }, (_, i) =>
      store.appendToStream(`stream-${(from + i) % 50}`, [{ type: 'Written', data: { n: from + i } }]),
    ),
  );

await append(0, 500);
await checkpointer.checkpointNow();
await append(500, 500);
process.stdout.write('ready\n');
setInterval(() => undefined, 60_000);
