/**
 * What every HTTP test checks of a response, in one place:
 * - `expectError(res, status, code, details?)`: the error envelope, exactly `{error: {code, message, details}}`
 *   as JSON, with that status and code, a message, and (when given) exactly those details.
 * - `expectMatchesOpenApi(method, path, res)`: a 2xx JSON body matches the response schema the
 *   OpenAPI document (GET /v1/openapi.json) declares for that operation and status. The harness's
 *   client (TestService.request) runs it on every response it receives.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { buildOpenApi } from '../../src/http/openapi.ts';

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: any;
}

export const expectError = (res: HttpResponse, status: number, code: string, details?: unknown): void => {
  expect(res.status, `${code}: ${JSON.stringify(res.body)}`).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.body).to.be.an('object').that.has.all.keys('error');
  expect(res.body.error).to.have.all.keys('code', 'message', 'details');
  expect(res.body.error.code).to.equal(code);
  expect(res.body.error.message).to.be.a('string').that.is.not.empty;
  if (details !== undefined) expect(res.body.error.details).to.deep.equal(details);
};

type Json = Record<string, any>;
const DOCUMENT_ID = 'openapi.json';
const escapePointer = (segment: string): string => segment.replaceAll('~', '~0').replaceAll('/', '~1');

interface Route {
  template: string;
  method: string;
  pattern: RegExp;
  params: number;
  operation: Json;
}

// ajv-formats is CommonJS: under NodeNext interop its default export arrives nested in `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

let compiled: { ajv: Ajv2020; routes: Route[]; validators: Map<string, ValidateFunction> } | undefined;

/** The document compiled once: every operation's path as a pattern, and ajv holding the whole document. */
const openApi = () => {
  if (compiled) return compiled;
  const document = buildOpenApi() as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv); // date-time, uri, ...: checked, not ignored
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(document.paths as Json))
    for (const [method, operation] of Object.entries(item as Json)) {
      if (method === 'parameters') continue;
      const source = template.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\{[a-z_]+\\\}/g, '[^/]+');
      routes.push({
        template,
        method: method.toUpperCase(),
        pattern: new RegExp(`^/v1${source}$`),
        params: (template.match(/\{/g) ?? []).length,
        operation: operation as Json,
      });
    }
  // literal segments first: /vouchers/validate before /vouchers/{voucher_id}
  routes.sort((a, b) => a.params - b.params);
  compiled = { ajv, routes, validators: new Map() };
  return compiled;
};

/** The operation of the document that answers `method path` (query left off), if any. */
export const operationFor = (method: string, urlPath: string): { template: string; operation: Json } | undefined => {
  const pathOnly = urlPath.split('?')[0]!;
  return openApi().routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(pathOnly));
};

/** Fails when a 2xx JSON body does not match its schema, or when the document lists no such answer. */
export const expectMatchesOpenApi = (method: string, urlPath: string, res: HttpResponse): void => {
  if (res.status < 200 || res.status >= 300) return;
  if (!/^application\/json/.test(res.headers.get('content-type') ?? '')) return;
  const route = operationFor(method, urlPath);
  if (!route) return; // not an operation of the document (/v1/openapi.json itself, /health, the dashboard)
  const response = route.operation.responses?.[String(res.status)];
  const label = `${method.toUpperCase()} ${route.template} → ${res.status}`;
  expect(response, `${label}: the OpenAPI document lists no such response`).to.not.equal(undefined);
  if (!response.content?.['application/json']) expect.fail(`${label}: the document lists no JSON body`);
  const { ajv, validators } = openApi();
  let validate = validators.get(label);
  if (!validate) {
    const pointer = ['paths', route.template, method.toLowerCase(), 'responses', String(res.status)]
      .concat(['content', 'application/json', 'schema'])
      .map(escapePointer)
      .join('/');
    validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${pointer}` });
    validators.set(label, validate);
  }
  if (!validate(res.body))
    expect.fail(
      `${label}: the body does not match the OpenAPI response schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(res.body)}`,
    );
};
