/**
 * An error as a worker thread of the stores posts it (structured clone keeps neither an error's
 * class nor its extra fields): a wrong expected revision with its details, or any other error by
 * name, message and SQLite-style `code`, rebuilt on the receiving thread as the same kind of error.
 */
import Database from 'better-sqlite3';
import { WrongExpectedRevisionError, type ExpectedRevision } from '../core/eventStore.ts';

export type WireError =
  | { kind: 'revision'; streamId: string; expected: ExpectedRevision; actual: number }
  | { kind: 'error'; name: string; message: string; code?: string };

export function toWireError(error: unknown): WireError {
  if (error instanceof WrongExpectedRevisionError)
    return { kind: 'revision', streamId: error.streamId, expected: error.expected, actual: error.actual };
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { kind: 'error', name: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { kind: 'error', name: 'Error', message: String(error) };
}

export function fromWireError(wire: WireError): Error {
  if (wire.kind === 'revision') return new WrongExpectedRevisionError(wire.streamId, wire.expected, wire.actual);
  if (wire.code !== undefined && wire.name === 'SqliteError') return new Database.SqliteError(wire.message, wire.code);
  const error = new Error(wire.message);
  error.name = wire.name;
  if (wire.code !== undefined) Object.assign(error, { code: wire.code });
  return error;
}
