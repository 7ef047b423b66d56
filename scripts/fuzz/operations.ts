/**
 * The operations the fuzzer targets, read from the service's own OpenAPI document
 * (src/http/openapi.ts, built from the schemas that validate requests): every path and method,
 * its path and query parameters and its JSON body schema.
 */
import { buildOpenApi } from '../../src/http/openapi.ts';
import type { Schema } from './schemaValues.ts';

export interface Operation {
  /** The operationId (`createVoucher`, ...). */
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** With the `/v1` prefix: `/v1/vouchers/{voucher_id}`. */
  template: string;
  pathParams: Array<{ name: string; pattern?: string }>;
  query: Record<string, Schema>;
  body?: Schema;
  bodyRequired: boolean;
  /** Takes an `Idempotency-Key` header. */
  idempotent: boolean;
}

interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}

const METHODS = ['get', 'post', 'put', 'delete'] as const;

/** Every operation of the document, in its order. */
export const operations = (): Operation[] => {
  const doc = buildOpenApi() as { paths: Record<string, Record<string, unknown>> };
  const out: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    if (item.servers) continue; // the operator's endpoints (/healthz, /readyz, /metrics) at the root: not the API
    const shared = (item.parameters as Parameter[] | undefined) ?? [];
    for (const method of METHODS) {
      const op = item[method] as
        | {
            operationId: string;
            parameters?: Parameter[];
            requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
          }
        | undefined;
      if (!op) continue;
      const parameters = [...shared, ...(op.parameters ?? [])];
      out.push({
        id: op.operationId,
        method: method.toUpperCase() as Operation['method'],
        template: `/v1${template}`,
        pathParams: parameters
          .filter((p) => p.in === 'path')
          .map((p) => ({ name: p.name, pattern: p.schema?.pattern as string | undefined })),
        query: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema ?? {}])),
        body: op.requestBody?.content['application/json']?.schema,
        bodyRequired: op.requestBody?.required === true,
        idempotent: parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
      });
    }
  }
  return out;
};
