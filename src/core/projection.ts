import type { DomainEvent } from './decider.ts';
import type { PositionedEvent } from './eventStore.ts';
import type { Document } from './readStore.ts';

/**
 * One read model, as a pure definition: which events it handles, which document each event
 * touches, and how the document evolves. The runner stores `_position` (the last global position
 * applied) on every document, so an event delivered twice changes nothing: it sets the field on the
 * object evolve returns, so evolve returns a new object or the one it was given, never one it keeps.
 */
export interface Projection<E extends DomainEvent = DomainEvent, V extends Document = Document> {
  name: string;
  collection: string;
  /** The event types it folds: the runner hands it these and no others. */
  handles: readonly E['type'][];
  documentId(event: PositionedEvent<E>): string | undefined;
  /** Returns the new document, or null to delete it. Must be pure. */
  evolve(view: V | null, event: PositionedEvent<E>): V | null;
  /** Indexes the read side queries with. */
  indexes?: string[][];
}

export type PositionedDocument = Document & { _position?: number };

/** A document of a DocumentSetProjection: which collection, which id. */
export interface DocRef {
  collection: string;
  id: string;
}

/** The documents an event touches, keyed `collection/id`; null when absent (or to delete). */
export type DocSet = Map<string, Document | null>;
export const docKey = (collection: string, id: string): string => `${collection}/${id}`;

/**
 * A read model spread over several documents (and collections) per event, as a pure definition:
 * `touches` names every document an event reads or writes (from the event alone, plus what
 * `follows` names from those documents), the runner loads them, and `evolve` returns the
 * documents that change (null: delete). Used where one event updates several aggregates at once
 * (analytics: a day, a customer, a dedupe record) or where the fold of one document needs another
 * (seen order ids). Redelivery: the runner skips an event when
 * any touched document already records a position at or after it; documents and checkpoint are
 * written in one transaction, so an event is either applied to all its documents or to none.
 */
export interface DocumentSetProjection<E extends DomainEvent = DomainEvent> {
  name: string;
  /** Collections written, with the indexes the read side queries each one with. */
  collections: Record<string, string[][]>;
  /** The event types it folds: the runner hands it these and no others. */
  handles: readonly E['type'][];
  touches(event: PositionedEvent<E>): DocRef[];
  /**
   * Documents the event also touches that only the touched documents can name (analytics: the
   * days of a customer's next uses, read from the customer's document). Called with the documents
   * `touches` named, as they are just before the event; must be pure.
   */
  follows?(event: PositionedEvent<E>, docs: ReadonlyMap<string, Document | null>): DocRef[];
  /**
   * Must be pure: `docs` holds every touched document; returns the changed ones, each a new
   * object or one of `docs` (the runner sets `_position` on them). The runner passes `owned`: the
   * documents of `docs` that evolve returned as new objects for an earlier event of the same
   * batch, which nothing but the runner holds until it writes them. Evolve may change those in
   * place (and the objects inside them it built itself) and return them again, so a document many
   * events of a batch touch is copied once per batch instead of once per event.
   */
  evolve(docs: ReadonlyMap<string, Document | null>, event: PositionedEvent<E>, owned?: OwnedSet): DocSet;
}

/**
 * A projection of any event union, as a group lists them. The runner delivers only the types a
 * projection `handles` (methods take their events bivariantly, which lets a list hold projections
 * typed on different unions).
 */
export type AnyProjection = Projection | DocumentSetProjection;

/** Which documents of an evolve's `docs` it may change in place (DocumentSetProjection.evolve). */
export interface OwnedSet {
  has(doc: Document): boolean;
}

export const isDocumentSet = (p: AnyProjection): p is DocumentSetProjection => 'touches' in p;

/** Collection names of a projection group (for resets). */
export const collectionsOf = (projections: AnyProjection[]): string[] => [
  ...new Set(projections.flatMap((p) => (isDocumentSet(p) ? Object.keys(p.collections) : [p.collection]))),
];

/** Every (collection, fields) index a projection group declares. */
export const indexesOf = (projections: AnyProjection[]): Array<[string, string[]]> =>
  projections.flatMap((p) =>
    isDocumentSet(p)
      ? Object.entries(p.collections).flatMap(([c, idx]) => idx.map((fields): [string, string[]] => [c, fields]))
      : (p.indexes ?? []).map((fields): [string, string[]] => [p.collection, fields]),
  );
