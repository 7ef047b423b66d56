import type { DomainEvent } from './decider.ts';
import type { EventLog, PositionedEvent } from './eventStore.ts';
import type { Document, ReadStore, WriteBatch } from './readStore.ts';
import { LogConsumer, type ConsumerLogger } from './logConsumer.ts';
import {
  docKey,
  indexesOf,
  isDocumentSet,
  type AnyProjection,
  type DocumentSetProjection,
  type PositionedDocument,
  type Projection,
} from './projection.ts';
import type { WrittenIds } from './writtenIds.ts';

export type RunnerLogger = ConsumerLogger;

/** What the rest of the service needs of a running projection group, wherever it runs. */
export interface ProjectorHandle {
  /** Last global position reflected in the read models. */
  readonly checkpoint: number;
  /** Resolves true once the read models reflect `position`, false after `timeoutMs`. */
  waitFor(position: number, timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Keeps a group of projections current from the event log: subscribes to all events after the
 * group's checkpoint, and for each batch loads the touched documents, folds the events in, and
 * writes the documents together with the new checkpoint in one transaction. Documents remember
 * the last position applied, so redelivered events change nothing.
 */
export class ProjectionRunner implements ProjectorHandle {
  /** Called after each batch is written with the new checkpoint (the projector thread reports it). */
  onAdvance?: (position: number) => void;

  private readonly consumer: LogConsumer<DomainEvent>;

  constructor(
    events: EventLog,
    private readonly reads: ReadStore,
    private readonly projections: AnyProjection[],
    private readonly checkpointName: string,
    logger?: RunnerLogger,
  ) {
    this.consumer = new LogConsumer<DomainEvent>({
      events,
      maxBatchSize: 1_000,
      load: () => this.reads.getCheckpoint(this.checkpointName),
      handle: (batch) => this.handle(batch),
      failure: 'projection failed',
      context: { checkpoint: checkpointName },
      logger,
      onAdvance: (position) => this.onAdvance?.(position),
    });
  }

  /** Last global position reflected in the read models. */
  get checkpoint(): number {
    return this.consumer.checkpoint;
  }

  async start(): Promise<void> {
    for (const [collection, fields] of indexesOf(this.projections)) await this.reads.ensureIndex(collection, fields);
    await this.consumer.start();
  }

  /** Resolves true once the read models reflect `position`, false after `timeoutMs`. */
  waitFor(position: number, timeoutMs = 5_000): Promise<boolean> {
    return this.consumer.waitFor(position, timeoutMs);
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  /**
   * Folds a batch of events into the read models and advances the checkpoint to its last event,
   * or to `rebuild.through` (a rebuild's page may end with events no projection of the group
   * handles: they were left out of the batch). A rebuild also passes `written`, the documents it
   * has written since it emptied the collections: the others are absent without a lookup, and
   * every document written is added to it.
   */
  async handle(
    batch: PositionedEvent<DomainEvent>[],
    rebuild?: { written: WrittenIds; through: number },
  ): Promise<void> {
    const position = Math.max(batch.at(-1)?.position ?? 0, rebuild?.through ?? 0);
    if (position === 0) return;
    const written = rebuild?.written;
    const write: WriteBatch = {
      upserts: [],
      deletes: [],
      checkpoint: { name: this.checkpointName, position },
    };
    for (const projection of this.projections) {
      if (isDocumentSet(projection)) await this.projectSet(projection, batch, write, written);
      else await this.project(projection, batch, write, written);
    }
    await this.reads.writeBatch(write);
    if (written) for (const { collection, doc } of write.upserts!) written.add(collection, doc.id);
    this.consumer.advance(position);
  }

  /** The documents of `ids` in the store (none looked up that `written` knows are absent). */
  private load(collection: string, ids: string[], written?: WrittenIds): Promise<Map<string, PositionedDocument>> {
    const wanted = written ? ids.filter((id) => written.mayExist(collection, id)) : ids;
    return wanted.length === 0
      ? Promise.resolve(new Map())
      : this.reads.getMany<PositionedDocument>(collection, wanted);
  }

  private async project(
    projection: Projection,
    batch: PositionedEvent<DomainEvent>[],
    write: WriteBatch,
    written?: WrittenIds,
  ): Promise<void> {
    const handled = new Set(projection.handles);
    const relevant = batch.filter((e) => handled.has(e.type) && projection.documentId(e) !== undefined);
    if (relevant.length === 0) return;
    const ids = [...new Set(relevant.map((e) => projection.documentId(e)!))];
    const loaded = await this.load(projection.collection, ids, written);
    const docs = new Map<string, PositionedDocument | null>(ids.map((id) => [id, loaded.get(id) ?? null]));
    for (const event of relevant) {
      const id = projection.documentId(event)!;
      const current = docs.get(id) ?? null;
      if (current && (current._position ?? 0) >= event.position) continue;
      const next = projection.evolve(current, event) as PositionedDocument | null;
      if (next) next._position = event.position;
      docs.set(id, next);
    }
    for (const [id, doc] of docs) {
      if (doc) write.upserts!.push({ collection: projection.collection, doc });
      else if (loaded.has(id)) write.deletes!.push({ collection: projection.collection, id });
    }
  }

  private async projectSet(
    projection: DocumentSetProjection,
    batch: PositionedEvent<DomainEvent>[],
    write: WriteBatch,
    written?: WrittenIds,
  ): Promise<void> {
    const handled = new Set(projection.handles);
    // one entry per touched document, by collection and id, shared by the events that touch it
    // (so is its key string, whose hash is computed once); each event with the entries of the
    // documents it touches
    const wanted = new Map<string, Map<string, Touched>>();
    const entryOf = (collection: string, id: string): Touched => {
      let ids = wanted.get(collection);
      if (ids === undefined) wanted.set(collection, (ids = new Map()));
      let entry = ids.get(id);
      if (entry === undefined) ids.set(id, (entry = new Touched(collection, id)));
      return entry;
    };
    const relevant: Array<{ event: PositionedEvent<DomainEvent>; touched: Touched[] }> = [];
    for (const event of batch) {
      if (!handled.has(event.type)) continue;
      const touched: Touched[] = [];
      for (const { collection, id } of projection.touches(event)) touched.push(entryOf(collection, id));
      relevant.push({ event, touched });
    }
    if (relevant.length === 0) return;
    for (const [collection, ids] of wanted) {
      const loaded = await this.load(collection, [...ids.keys()], written);
      for (const [id, entry] of ids) entry.loaded(loaded.get(id) ?? null);
    }
    const changed: Touched[] = [];
    // the entries of the event being folded, by key: the documents evolve may return
    const current = new Map<string, Touched>();
    const owned = new OwnedDocuments(current);
    for (let n = 0; n < relevant.length; n += 1) {
      const { event, touched } = relevant[n]!;
      const view = new Map<string, PositionedDocument | null>();
      current.clear();
      let seen = false;
      for (const entry of touched) {
        const doc = entry.doc;
        if (doc !== null && (doc._position ?? 0) >= event.position) seen = true;
        view.set(entry.key, doc);
        current.set(entry.key, entry);
      }
      if (seen) continue; // a touched document has this event already
      for (const { collection, id } of projection.follows?.(event, view) ?? []) {
        const entry = entryOf(collection, id);
        if (!entry.isLoaded) entry.loaded((await this.load(collection, [id], written)).get(id) ?? null);
        view.set(entry.key, entry.doc);
        current.set(entry.key, entry);
      }
      for (const [key, next] of projection.evolve(view, event, owned)) {
        const entry = current.get(key);
        if (entry === undefined)
          throw new Error(`projection ${projection.name} wrote ${key}, which the event does not touch`);
        if (next) {
          if (next !== entry.doc) entry.owned = true;
          (next as PositionedDocument)._position = event.position;
        }
        entry.doc = next as PositionedDocument | null;
        if (!entry.changed) {
          entry.changed = true;
          changed.push(entry);
        }
      }
    }
    for (const { collection, id, doc, existed } of changed) {
      if (doc) write.upserts!.push({ collection, doc });
      else if (existed) write.deletes!.push({ collection, id });
    }
  }
}

/**
 * The documents of the event being folded that evolve returned as new objects for an earlier
 * event of the batch (DocumentSetProjection.evolve's `owned`), looked up among that event's
 * entries, not in a set of every document of the batch.
 */
class OwnedDocuments {
  constructor(private readonly current: ReadonlyMap<string, Touched>) {}
  has(doc: Document): boolean {
    for (const entry of this.current.values()) if (entry.doc === doc) return entry.owned;
    return false;
  }
}

/** A document a batch touches, as the runner folds the batch into it. */
class Touched {
  doc: PositionedDocument | null = null;
  /** Whether `doc` and `existed` are the store's (what the batch found there). */
  isLoaded = false;
  /** Whether the store held it before the batch. */
  existed = false;
  /** Whether an event of the batch changed it (it is written). */
  changed = false;
  /** Whether `doc` is an object evolve returned as new in this batch (only the runner holds it). */
  owned = false;
  constructor(
    readonly collection: string,
    readonly id: string,
    readonly key: string = docKey(collection, id),
  ) {}
  loaded(doc: PositionedDocument | null): void {
    this.doc = doc;
    this.existed = doc !== null;
    this.isLoaded = true;
  }
}
