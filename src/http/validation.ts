import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { shownField } from '../domain/shown.ts';
import { invalidRequest } from '../domain/errors.ts';

// ajv-formats is CommonJS: under NodeNext interop its default export arrives nested in `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

const ajv = addFormats(new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }));
const ajvQuery = addFormats(
  new Ajv({ allErrors: true, strict: true, coerceTypes: true, useDefaults: true, allowUnionTypes: true }),
);

const fieldOf = (error: ErrorObject): string => {
  const base = error.instancePath
    .slice(1)
    .replaceAll('/', '.')
    .replace(/\.(\d+)(?=\.|$)/g, '[$1]');
  const child =
    error.keyword === 'required'
      ? String(error.params.missingProperty)
      : error.keyword === 'additionalProperties'
        ? String(error.params.additionalProperty)
        : '';
  return shownField([base, child].filter(Boolean).join('.') || 'body');
};

const messageOf = (error: ErrorObject): string => {
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not allowed';
    case 'enum':
      return `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
    default:
      return error.message ?? 'is invalid';
  }
};

/** Ajv errors as the spec's INVALID_REQUEST details: one {field, message} per field. */
export const toProblems = (errors: ErrorObject[] | null | undefined): Array<{ field: string; message: string }> => {
  const seen = new Map<string, string>();
  for (const error of errors ?? []) {
    if (error.keyword === 'if' || error.keyword === 'anyOf' || error.keyword === 'oneOf') continue;
    const field = fieldOf(error);
    if (!seen.has(field)) seen.set(field, messageOf(error));
  }
  return [...seen].map(([field, message]) => ({ field, message }));
};

export interface Validator<T> {
  (value: unknown): T;
}

const compileWith = <T>(instance: Ajv, schema: object, root: string): Validator<T> => {
  const validate: ValidateFunction = instance.compile(schema);
  return (value: unknown): T => {
    if (validate(value)) return value as T;
    const problems = toProblems(validate.errors).map((p) => ({
      ...p,
      field: root && p.field === 'body' ? root : p.field,
    }));
    throw invalidRequest(problems.length > 0 ? problems : [{ field: root || 'body', message: 'is invalid' }]);
  };
};

/** A body validator: returns the typed body or throws INVALID_REQUEST naming each field. */
export const compileBody = <T>(schema: object): Validator<T> => compileWith<T>(ajv, schema, 'body');
/** A query validator: coerces strings to the schema's types and fills defaults. */
export const compileQuery = <T>(schema: object): Validator<T> => compileWith<T>(ajvQuery, schema, 'query');
