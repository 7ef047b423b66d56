/**
 * ReadStore port: collections of JSON documents keyed by `id`, used by projections (read
 * models). Implemented by the embedded SQLite store (default) and the MongoDB adapter; both
 * pass test/contract/readStoreContract.ts.
 *
 * Filters are a small subset of MongoDB's query language, so the Mongo adapter passes them
 * through unchanged:
 *   { field: value }                       equality (value: string | number | boolean | null)
 *   { field: { $eq, $ne, $gt, $gte, $lt, $lte, $in: [...] } }   operators (combinable)
 *   { $or: [filter, filter, ...] }         disjunction
 * Field names may be dotted paths into nested objects ("conditions.valid_until").
 * Equality with null matches documents where the field is null or missing.
 * Comparison ($gt...) between values of different JSON types never matches.
 */
export type Scalar = string | number | boolean | null;

export interface FieldOperators {
  $eq?: Scalar;
  $ne?: Scalar;
  $gt?: string | number;
  $gte?: string | number;
  $lt?: string | number;
  $lte?: string | number;
  $in?: Scalar[];
}

export type Filter = {
  $or?: Filter[];
} & {
  [field: string]: Scalar | FieldOperators | Filter[] | undefined;
};

export type SortSpec = Array<[field: string, direction: 1 | -1]>;

export interface FindOptions {
  sort?: SortSpec;
  skip?: number;
  limit?: number;
}

export interface Document {
  id: string;
  [key: string]: unknown;
}

export interface WriteBatch {
  upserts?: Array<{ collection: string; doc: Document }>;
  deletes?: Array<{ collection: string; id: string }>;
  /** Stored in the same transaction as the document writes. */
  checkpoint?: { name: string; position: number };
  /**
   * A condition checked in the same transaction: the batch is written only while document `id`
   * of `collection` has `field` equal to `value` (`null`: the document is absent); otherwise
   * nothing is written and writeBatch rejects with FencedWriteError. Leases use it (lease.ts):
   * a writer that lost its lease cannot write, however late its write arrives.
   */
  fence?: { collection: string; id: string; field: string; value: string | null };
}

/** A write refused because its fence no longer holds (another writer took the lease). */
export class FencedWriteError extends Error {
  constructor(collection: string, id: string) {
    super(`write refused: ${collection}/${id} no longer holds this writer's fence`);
    this.name = 'FencedWriteError';
  }
}

export interface ReadStore {
  get<T extends Document = Document>(collection: string, id: string): Promise<T | null>;
  /** Documents found among `ids` (missing ids are absent from the map). */
  getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<Map<string, T>>;
  find<T extends Document = Document>(collection: string, filter?: Filter, options?: FindOptions): Promise<T[]>;
  count(collection: string, filter?: Filter): Promise<number>;
  /** Writes every upsert and delete and the checkpoint atomically (all or nothing). */
  writeBatch(batch: WriteBatch): Promise<void>;
  /** Last position stored for this checkpoint name; 0 when none. */
  getCheckpoint(name: string): Promise<number>;
  /** Declares an index on fields (idempotent). Queries work without it, only slower. */
  ensureIndex(collection: string, fields: string[]): Promise<void>;
  /** Removes every document of the collections and the checkpoint, atomically (for rebuilds). */
  reset(collections: string[], checkpointName: string): Promise<void>;
  /**
   * Runs `work` (a rebuild's writes) with the store tuned for bulk writes, then restores its
   * settings and makes what was written durable before resolving. Optional: a store without it
   * runs the rebuild with its usual settings.
   */
  bulkWrites?<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
