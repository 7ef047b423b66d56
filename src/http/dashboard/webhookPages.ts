import type { Environment } from '../../application/context.ts';
import type { Attempt, DeliveryStatus } from '../../domain/webhooks/delivery.ts';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/events.ts';
import { html, type SafeHtml } from './html.ts';
import { ENVIRONMENT_LABEL, envBadge, when } from './keyPages.ts';
import { csrfField, layout } from './layout.ts';

/** An endpoint as the application renders it (renderEndpoint); never its secret. */
export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason?: string;
  created_at: string;
  updated_at: string;
}

/** A delivery as the application renders it (renderDelivery). */
export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: Attempt[];
  next_attempt_at: string | null;
  failure_reason?: string;
  created_at: string;
}

/** A problem with a form field, as the endpoint decider names it (`url`, `events[2]`, `since`, …). */
export interface FieldProblem {
  field: string;
  message: string;
}

const FIELD_LABEL: Record<string, string> = {
  url: 'URL',
  events: 'Events',
  description: 'Description',
  since: 'Since',
};
/** The form's label for a problem's field: `events[2]` is the Events field. */
export const fieldLabel = (field: string): string | undefined => FIELD_LABEL[field.replace(/\[\d+\]$/, '')];

const EVENT_HELP: Record<string, string> = {
  'voucher.created': 'A voucher was created',
  'voucher.updated': 'A voucher was changed',
  'voucher.deleted': 'A voucher was deactivated',
  'voucher.applied': 'A voucher was applied to an order',
  'voucher.application_rolled_back': 'An application was rolled back',
  'voucher.expired': 'A voucher reached its expiry',
};

export const ENVIRONMENTS: readonly Environment[] = ['sandbox', 'production'];

const base = (environment: Environment): string => `/dashboard/webhooks/${environment}`;
export const endpointPath = (environment: Environment, id: string): string =>
  `${base(environment)}/${encodeURIComponent(id)}`;

/** The problems as one alert, each naming its field; the fields are marked invalid beside it. */
const problemAlert = (problems: FieldProblem[]): SafeHtml =>
  problems.length === 0
    ? html``
    : html`<div class="alert alert-error" role="alert" id="form-error">
        ${
          problems.length === 1
            ? html`<p>${problemText(problems[0]!)}</p>`
            : html`<ul>
                ${problems.map((p) => html`<li>${problemText(p)}</li>`)}
              </ul>`
        }
      </div>`;

const problemText = (p: FieldProblem): SafeHtml => {
  const label = fieldLabel(p.field);
  return label ? html`<strong>${label}</strong> ${p.message}.` : html`${p.message}.`;
};

const invalid = (problems: FieldProblem[], field: string): SafeHtml =>
  problems.some((p) => fieldLabel(p.field) === FIELD_LABEL[field])
    ? html`aria-invalid="true" aria-describedby="form-error"`
    : html``;

const statusBadge = (endpoint: EndpointView): SafeHtml =>
  endpoint.status === 'enabled'
    ? html`<span class="badge badge-active">Enabled</span>`
    : html`<span class="badge badge-revoked">Disabled</span>
        ${endpoint.disabled_reason ? html`<span class="muted small">${endpoint.disabled_reason}</span>` : ''}`;

const eventList = (events: string[]): SafeHtml =>
  html`<ul class="scopes">
    ${events.includes('*') ? html`<li class="all">All events</li>` : events.map((e) => html`<li>${e}</li>`)}
  </ul>`;

const envTabs = (current: Environment): SafeHtml =>
  html`<nav class="tabs" aria-label="Environment">
    ${ENVIRONMENTS.map(
      (env) =>
        html`<a
          class="tab ${env === current ? 'is-current' : ''}"
          href="${base(env)}"
          ${env === current ? html`aria-current="page"` : ''}
          >${ENVIRONMENT_LABEL[env]}</a
        >`,
    )}
  </nav>`;

const endpointRow = (environment: Environment, endpoint: EndpointView): SafeHtml =>
  html`<tr class="${endpoint.status === 'disabled' ? 'is-revoked' : ''}" data-endpoint-id="${endpoint.id}">
    <td>
      <a class="endpoint-url" href="${endpointPath(environment, endpoint.id)}"><code>${endpoint.url}</code></a>
      ${endpoint.description ? html`<div class="muted small">${endpoint.description}</div>` : ''}
    </td>
    <td>${eventList(endpoint.events)}</td>
    <td>${statusBadge(endpoint)}</td>
    <td>${when(endpoint.created_at)}</td>
    <td class="actions">
      <a class="button" href="${endpointPath(environment, endpoint.id)}">Deliveries</a>
    </td>
  </tr>`;

export interface EndpointForm {
  url: string;
  description: string;
  events: string[];
}

export const DEFAULT_ENDPOINT_FORM: EndpointForm = { url: '', description: '', events: [] };

const createForm = (csrf: string, environment: Environment, form: EndpointForm, problems: FieldProblem[]): SafeHtml =>
  html`<section class="card" id="create">
    <h2>Add an endpoint</h2>
    ${problemAlert(problems)}
    <form method="post" action="${base(environment)}" class="stack" novalidate>
      ${csrfField(csrf)}
      <label for="url">URL</label>
      <input
        id="url"
        name="url"
        type="url"
        maxlength="2048"
        required
        placeholder="https://example.com/webhooks"
        value="${form.url}"
        ${invalid(problems, 'url')}
      />
      <p class="muted small">
        ${
          environment === 'production'
            ? 'https only in production.'
            : 'https, or http in sandbox. Private and loopback addresses are refused unless the operator allows them.'
        }
      </p>
      <label for="description">Description <span class="muted small">(optional)</span></label>
      <input
        id="description"
        name="description"
        type="text"
        maxlength="500"
        placeholder="e.g. Order service"
        value="${form.description}"
        ${invalid(problems, 'description')}
      />
      <fieldset ${invalid(problems, 'events')}>
        <legend>Events</legend>
        <div class="choices grid">
          <label class="choice">
            <input type="checkbox" name="events" value="*" ${form.events.includes('*') ? html`checked` : ''} />
            <strong>All events</strong> <span class="muted small">Every type, including ones added later</span>
          </label>
          ${WEBHOOK_EVENT_TYPES.map(
            (type) =>
              html`<label class="choice">
                <input
                  type="checkbox"
                  name="events"
                  value="${type}"
                  ${form.events.includes(type) ? html`checked` : ''}
                />
                <code>${type}</code> <span class="muted small">${EVENT_HELP[type]}</span>
              </label>`,
          )}
        </div>
      </fieldset>
      <button type="submit" class="button button-primary">Add endpoint</button>
    </form>
  </section>`;

const verifying = html`<section class="card" id="verifying">
  <h2>Receiving webhooks</h2>
  <ol class="steps">
    <li>
      Each event is a <code>POST</code> with a JSON body, signed per Standard Webhooks: headers <code>webhook-id</code>,
      <code>webhook-timestamp</code> and <code>webhook-signature</code>.
    </li>
    <li>
      <strong>Verify</strong> every request with the endpoint's signing secret (<code>whsec_…</code>), e.g. with the
      <code>standardwebhooks</code> library, and drop repeats by <code>webhook-id</code>.
    </li>
    <li>Answer <code>2xx</code> quickly. Anything else, or no answer, is retried for about 28 hours.</li>
  </ol>
  <p class="muted small">Sandbox endpoints get sandbox events only; production endpoints get production events only.</p>
</section>`;

export const webhooksPage = (opts: {
  csrf: string;
  environment: Environment;
  endpoints: EndpointView[];
  total: number;
  max: number;
  notice?: string;
  problems?: FieldProblem[];
  form?: EndpointForm;
}): SafeHtml =>
  layout({
    title: `Webhooks · ${ENVIRONMENT_LABEL[opts.environment]}`,
    csrf: opts.csrf,
    body: html`<div class="page-head">
        <h1>Webhooks</h1>
        ${envTabs(opts.environment)}
        <a class="button button-primary" href="#create">Add an endpoint</a>
      </div>
      ${opts.notice ? html`<p class="alert alert-info" role="status">${opts.notice}</p>` : ''}
      <section class="card" id="endpoints">
        <h2>
          ${ENVIRONMENT_LABEL[opts.environment]} endpoints <span class="muted small">${opts.total} of ${opts.max}</span>
        </h2>
        ${
          opts.endpoints.length === 0
            ? html`<p class="muted">No endpoints in ${ENVIRONMENT_LABEL[opts.environment]} yet.</p>`
            : html`<div class="table-wrap">
                <table class="keys endpoints">
                  <thead>
                    <tr>
                      <th>URL</th>
                      <th>Events</th>
                      <th>Status</th>
                      <th>Created</th>
                      <th><span class="sr-only">Actions</span></th>
                    </tr>
                  </thead>
                  <tbody>
                    ${opts.endpoints.map((e) => endpointRow(opts.environment, e))}
                  </tbody>
                </table>
              </div>`
        }
      </section>
      <div class="columns">
        ${createForm(opts.csrf, opts.environment, opts.form ?? DEFAULT_ENDPOINT_FORM, opts.problems ?? [])} ${verifying}
      </div>`,
  });

/** The one page that shows a signing secret: after creation or rotation (no-store, never again). */
export const secretPage = (opts: {
  csrf: string;
  environment: Environment;
  endpoint: EndpointView;
  secret: string;
  /** After a rotation: until when the previous secret still signs. */
  previousExpiresAt?: string;
}): SafeHtml =>
  layout({
    title: opts.previousExpiresAt ? 'New signing secret' : 'New webhook endpoint',
    csrf: opts.csrf,
    scripts: ['copy.js'],
    body: html`<section class="card narrow-wide">
      <h1>${opts.previousExpiresAt ? 'Your new signing secret' : 'Your new endpoint’s signing secret'}</h1>
      <p class="alert alert-warning" role="alert">
        <strong>Copy this secret now. It is shown only once.</strong> Your receiver verifies each delivery with it. Lost
        it? Rotate the secret on the endpoint's page.
      </p>
      <div class="secret-row">
        <code id="new-secret" class="secret">${opts.secret}</code>
        <button type="button" class="button button-primary" data-copy="new-secret" data-copy-what="secret" hidden>
          Copy
        </button>
      </div>
      <p id="copy-status" class="muted small" role="status" aria-live="polite"></p>
      ${
        opts.previousExpiresAt
          ? html`<p class="alert alert-info" id="previous-secret">
              The previous secret keeps signing beside this one until ${when(opts.previousExpiresAt)}: each delivery
              carries both signatures meanwhile, so switch your receiver over before then.
            </p>`
          : ''
      }
      <dl class="facts">
        <dt>URL</dt>
        <dd><code>${opts.endpoint.url}</code></dd>
        <dt>Environment</dt>
        <dd>${envBadge(opts.environment)}</dd>
        <dt>Events</dt>
        <dd>${eventList(opts.endpoint.events)}</dd>
      </dl>
      <p>
        <a class="button" href="${endpointPath(opts.environment, opts.endpoint.id)}"
          >I have copied it: go to the endpoint</a
        >
      </p>
    </section>`,
  });

const deliveryStatus = (d: DeliveryView): SafeHtml =>
  d.status === 'succeeded'
    ? html`<span class="badge badge-active">Succeeded</span>`
    : d.status === 'failed'
      ? html`<span class="badge badge-failed">Failed</span>`
      : html`<span class="badge badge-sandbox">Pending</span>`;

const attemptOutcome = (a: Attempt): SafeHtml =>
  a.response_status !== undefined
    ? html`<code class="response-code ${a.response_status >= 200 && a.response_status < 300 ? 'ok' : 'bad'}"
        >${a.response_status}</code
      >`
    : html`<span class="muted">${a.error ?? 'no answer'}</span>`;

const attempts = (d: DeliveryView): SafeHtml =>
  d.attempts.length === 0
    ? html`<span class="muted">None yet</span>`
    : html`<details class="attempts">
        <summary>
          ${d.attempts.length} ${d.attempts.length === 1 ? 'attempt' : 'attempts'}: last
          ${attemptOutcome(d.attempts[d.attempts.length - 1]!)}
        </summary>
        <ol>
          ${d.attempts.map(
            (a) =>
              html`<li>${when(a.at)} ${attemptOutcome(a)} <span class="muted small">${a.duration_ms} ms</span></li>`,
          )}
        </ol>
      </details>`;

const deliveryRow = (csrf: string, environment: Environment, endpointId: string, d: DeliveryView): SafeHtml =>
  html`<tr data-delivery-id="${d.id}">
    <td>
      <code>${d.event_type}</code>
      <div class="muted small"><code>${d.event_id}</code></div>
    </td>
    <td>${when(d.created_at)}</td>
    <td>${deliveryStatus(d)} ${d.failure_reason ? html`<div class="muted small">${d.failure_reason}</div>` : ''}</td>
    <td>${attempts(d)}</td>
    <td>${d.next_attempt_at ? when(d.next_attempt_at) : html`<span class="muted">–</span>`}</td>
    <td class="actions">
      <form
        method="post"
        action="${endpointPath(environment, endpointId)}/deliveries/${encodeURIComponent(d.id)}/resend"
        class="inline-form"
      >
        ${csrfField(csrf)}
        <button type="submit" class="button">Resend</button>
      </form>
    </td>
  </tr>`;

export interface DeliveryListing {
  deliveries: DeliveryView[];
  total: number;
  offset: number;
  limit: number;
  status?: DeliveryStatus;
}

const STATUS_FILTERS: Array<[DeliveryStatus | undefined, string]> = [
  [undefined, 'All'],
  ['pending', 'Pending'],
  ['failed', 'Failed'],
  ['succeeded', 'Succeeded'],
];

const listingHref = (path: string, status: DeliveryStatus | undefined, offset: number): string => {
  const query = new URLSearchParams();
  if (status) query.set('status', status);
  if (offset > 0) query.set('offset', String(offset));
  const q = query.toString();
  return `${path}${q ? `?${q}` : ''}#deliveries`;
};

const deliveriesCard = (
  csrf: string,
  environment: Environment,
  endpoint: EndpointView,
  listing: DeliveryListing | undefined,
): SafeHtml => {
  const path = endpointPath(environment, endpoint.id);
  if (!listing)
    return html`<section class="card" id="deliveries">
      <h2>Recent deliveries</h2>
      <p class="muted">This process does not deliver webhooks, so it has no deliveries to show.</p>
    </section>`;
  const { deliveries, total, offset, limit, status } = listing;
  return html`<section class="card" id="deliveries">
    <div class="card-head">
      <h2>Recent deliveries <span class="muted small">${total}</span></h2>
      <nav class="tabs small" aria-label="Delivery status">
        ${STATUS_FILTERS.map(
          ([s, label]) =>
            html`<a
              class="tab ${s === status ? 'is-current' : ''}"
              href="${listingHref(path, s, 0)}"
              ${s === status ? html`aria-current="page"` : ''}
              >${label}</a
            >`,
        )}
      </nav>
    </div>
    ${
      deliveries.length === 0
        ? html`<p class="muted">
            ${status ? `No ${status} deliveries.` : 'No deliveries yet. Send a test event, or wait for a voucher event.'}
          </p>`
        : html`<div class="table-wrap">
            <table class="keys deliveries">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Created</th>
                  <th>Status</th>
                  <th>Attempts</th>
                  <th>Next retry</th>
                  <th><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                ${deliveries.map((d) => deliveryRow(csrf, environment, endpoint.id, d))}
              </tbody>
            </table>
          </div>`
    }
    ${
      offset > 0 || offset + deliveries.length < total
        ? html`<p class="button-row pager">
            ${offset > 0 ? html`<a class="button" href="${listingHref(path, status, Math.max(0, offset - limit))}">Newer</a>` : ''}
            <span class="muted small">${offset + 1}–${offset + deliveries.length} of ${total}</span>
            ${
              offset + deliveries.length < total
                ? html`<a class="button" href="${listingHref(path, status, offset + limit)}">Older</a>`
                : ''
            }
          </p>`
        : ''
    }
  </section>`;
};

const recoverCard = (
  csrf: string,
  environment: Environment,
  endpoint: EndpointView,
  since: string,
  problems: FieldProblem[],
): SafeHtml =>
  html`<section class="card" id="recover">
    <h2>Recover failed deliveries</h2>
    <p class="muted small">
      Failed deliveries created at or after this time are sent again, oldest first, in order per voucher.
    </p>
    ${problemAlert(problems)}
    <form method="post" action="${endpointPath(environment, endpoint.id)}/recover" class="stack" novalidate>
      ${csrfField(csrf)}
      <label for="since">Since <span class="muted small">(UTC)</span></label>
      <input
        id="since"
        name="since"
        type="datetime-local"
        step="1"
        required
        value="${since}"
        ${invalid(problems, 'since')}
      />
      <button type="submit" class="button">Recover failed deliveries</button>
    </form>
  </section>`;

const manageCard = (csrf: string, environment: Environment, endpoint: EndpointView, delivering: boolean): SafeHtml => {
  const path = endpointPath(environment, endpoint.id);
  return html`<section class="card" id="manage">
    <h2>Manage</h2>
    <div class="stack">
      ${
        delivering
          ? html`<form method="post" action="${path}/test" class="button-row">
              ${csrfField(csrf)}
              <button type="submit" class="button">Send a test event</button>
              <span class="muted small"><code>webhook.test</code>, to this endpoint only</span>
            </form>`
          : ''
      }
      <form method="post" action="${path}/rotate" class="button-row">
        ${csrfField(csrf)}
        <button type="submit" class="button">Rotate secret</button>
        <span class="muted small">The new secret is shown once; the old one keeps signing for 24 hours</span>
      </form>
      <form method="post" action="${path}/status" class="button-row">
        ${csrfField(csrf)}
        ${
          endpoint.status === 'enabled'
            ? html`<input type="hidden" name="status" value="disabled" />
                <button type="submit" class="button">Disable</button>
                <span class="muted small">Pending deliveries fail; no new ones until enabled again</span>`
            : html`<input type="hidden" name="status" value="enabled" />
                <button type="submit" class="button button-primary">Enable</button>
                <span class="muted small"
                  >New events are delivered again; recover below the ones that failed meanwhile</span
                >`
        }
      </form>
      <p class="button-row">
        <a class="button button-danger-quiet" href="${path}/delete">Delete endpoint</a>
      </p>
    </div>
  </section>`;
};

export const endpointPage = (opts: {
  csrf: string;
  environment: Environment;
  endpoint: EndpointView;
  listing?: DeliveryListing;
  notice?: string;
  since: string;
  problems?: FieldProblem[];
}): SafeHtml => {
  const { endpoint, environment } = opts;
  return layout({
    title: `Webhook endpoint · ${endpoint.url}`,
    csrf: opts.csrf,
    body: html`<p class="muted small">
        <a href="${base(environment)}">Webhooks</a> › ${ENVIRONMENT_LABEL[environment]}
      </p>
      <div class="page-head">
        <h1 class="endpoint-title"><code>${endpoint.url}</code></h1>
      </div>
      ${opts.notice ? html`<p class="alert alert-info" role="status">${opts.notice}</p>` : ''}
      <div class="columns">
        <section class="card" id="details">
          <h2>Endpoint</h2>
          <dl class="facts">
            <dt>Id</dt>
            <dd><code>${endpoint.id}</code></dd>
            <dt>Environment</dt>
            <dd>${envBadge(environment)}</dd>
            <dt>Status</dt>
            <dd id="endpoint-status">${statusBadge(endpoint)}</dd>
            <dt>Events</dt>
            <dd>${eventList(endpoint.events)}</dd>
            ${
              endpoint.description
                ? html`<dt>Description</dt>
                    <dd>${endpoint.description}</dd>`
                : ''
            }
            <dt>Created</dt>
            <dd>${when(endpoint.created_at)}</dd>
            <dt>Updated</dt>
            <dd>${when(endpoint.updated_at)}</dd>
          </dl>
        </section>
        ${manageCard(opts.csrf, environment, endpoint, opts.listing !== undefined)}
      </div>
      ${deliveriesCard(opts.csrf, environment, endpoint, opts.listing)}
      ${opts.listing ? recoverCard(opts.csrf, environment, endpoint, opts.since, opts.problems ?? []) : ''}`,
  });
};

export const confirmDeletePage = (opts: {
  csrf: string;
  environment: Environment;
  endpoint: EndpointView;
}): SafeHtml => {
  const path = endpointPath(opts.environment, opts.endpoint.id);
  return layout({
    title: 'Delete webhook endpoint',
    csrf: opts.csrf,
    body: html`<section class="card narrow-wide">
      <h1>Delete this endpoint?</h1>
      <dl class="facts">
        <dt>URL</dt>
        <dd><code>${opts.endpoint.url}</code></dd>
        <dt>Environment</dt>
        <dd>${envBadge(opts.environment)}</dd>
        <dt>Events</dt>
        <dd>${eventList(opts.endpoint.events)}</dd>
        <dt>Created</dt>
        <dd>${when(opts.endpoint.created_at)}</dd>
      </dl>
      <p class="alert alert-warning">
        It gets no further deliveries, and its pending ones fail. This cannot be undone: to receive events again, add a
        new endpoint (it gets a new secret).
      </p>
      <form method="post" action="${path}/delete" class="button-row">
        ${csrfField(opts.csrf)}
        <button type="submit" class="button button-danger">Delete endpoint</button>
        <a class="button" href="${path}">Cancel</a>
      </form>
    </section>`,
  });
};
