import type { RecordedEvent } from '../eventStore/eventStore.ts';
import type { Document } from '../readStore/readStore.ts';

/**
 * One read model, as a pure definition: which events it handles, which document each event
 * touches, and how the document evolves. The runner stores `_position` (the last global position
 * applied) on every document, so an event delivered twice changes nothing.
 */
export interface Projection<V extends Document = Document> {
  name: string;
  collection: string;
  handles: readonly string[];
  documentId(event: RecordedEvent): string | undefined;
  /** Returns the new document, or null to delete it. Must be pure. */
  evolve(view: V | null, event: RecordedEvent): V | null;
  /** Indexes the read side queries with. */
  indexes?: string[][];
}

export type PositionedDocument = Document & { _position?: number };
