import { ALL_SCOPES, type ApiKeyRecord, type Scope } from '../../application/apiKeys.ts';
import type { Environment } from '../../application/context.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout } from './layout.ts';

const SCOPE_HELP: Record<Scope, string> = {
  'vouchers:read': 'List and retrieve vouchers',
  'vouchers:write': 'Create and update vouchers',
  'vouchers:delete': 'Deactivate vouchers',
  'vouchers:redeem': 'Validate, apply and roll back',
  'analytics:read': 'Read analytics and exports',
  'webhooks:manage': 'Manage webhook endpoints',
};

export const ENVIRONMENT_LABEL: Record<Environment, string> = { production: 'Production', sandbox: 'Sandbox' };

/** `2026-01-15T12:00:00Z` as `2026-01-15 12:00 UTC` (the time on its own line in tables). */
export const when = (iso: string | undefined, never = 'Never'): SafeHtml =>
  iso
    ? html`<time datetime="${iso}">${iso.slice(0, 10)} <span class="time">${iso.slice(11, 16)} UTC</span></time>`
    : html`<span class="muted">${never}</span>`;

export const envBadge = (environment: Environment): SafeHtml =>
  html`<span class="badge badge-${environment}">${ENVIRONMENT_LABEL[environment]}</span>`;

/** What a list shows instead of a key: its prefix and last four characters. */
export const maskedKey = (record: ApiKeyRecord): string => `${record.prefix}…${record.last4}`;

export const isConfiguredKey = (record: ApiKeyRecord): boolean => record.id.startsWith('key_cfg_');

const status = (record: ApiKeyRecord): SafeHtml =>
  record.revokedAt
    ? html`<span class="badge badge-revoked">Revoked</span> <span class="muted small">${when(record.revokedAt)}</span>`
    : html`<span class="badge badge-active">Active</span>`;

/** Scopes as pills; a key with every scope says so in one. */
const scopeList = (scopes: Scope[]): SafeHtml =>
  html`<ul class="scopes">
    ${
      scopes.length === ALL_SCOPES.length
        ? html`<li class="all" title="${scopes.join(', ')}">All scopes</li>`
        : scopes.map((s) => html`<li>${s}</li>`)
    }
  </ul>`;

const keyRow = (record: ApiKeyRecord): SafeHtml =>
  html`<tr class="${record.revokedAt ? 'is-revoked' : ''}" data-key-id="${record.id}">
    <td><strong>${record.name}</strong></td>
    <td>${envBadge(record.environment)}</td>
    <td><code class="masked-key">${maskedKey(record)}</code></td>
    <td>${scopeList(record.scopes)}</td>
    <td>${when(record.createdAt)}</td>
    <td>${when(record.lastUsedAt)}</td>
    <td>${status(record)}</td>
    <td class="actions">
      ${
        record.revokedAt
          ? ''
          : isConfiguredKey(record)
            ? html`<span class="muted small" title="Set in VOUCHER_API_KEYS: remove it there to revoke it"
                >Configured</span
              >`
            : html`<a class="button button-danger-quiet" href="/dashboard/keys/${encodeURIComponent(record.id)}/revoke"
                >Revoke</a
              >`
      }
    </td>
  </tr>`;

export interface CreateForm {
  name: string;
  environment: Environment;
  scopes: Scope[];
}

export const DEFAULT_FORM: CreateForm = { name: '', environment: 'sandbox', scopes: [...ALL_SCOPES] };

const createForm = (csrf: string, form: CreateForm, error?: string): SafeHtml =>
  html`<section class="card" id="create">
    <h2>Create a key</h2>
    ${error ? html`<p class="alert alert-error" role="alert">${error}</p>` : ''}
    <form method="post" action="/dashboard/keys" class="stack">
      ${csrfField(csrf)}
      <label for="name">Name</label>
      <input
        id="name"
        name="name"
        type="text"
        maxlength="100"
        required
        placeholder="e.g. Checkout backend"
        value="${form.name}"
      />
      <fieldset>
        <legend>Environment</legend>
        <div class="choices">
          ${(['sandbox', 'production'] as const).map(
            (env) =>
              html`<label class="choice">
                <input
                  type="radio"
                  name="environment"
                  value="${env}"
                  ${form.environment === env ? html`checked` : ''}
                />
                ${ENVIRONMENT_LABEL[env]}
                <span class="muted small"
                  >${env === 'sandbox' ? 'sk_test_… test data only' : 'sk_live_… real orders'}</span
                >
              </label>`,
          )}
        </div>
      </fieldset>
      <fieldset>
        <legend>Scopes</legend>
        <div class="choices grid">
          ${ALL_SCOPES.map(
            (scope) =>
              html`<label class="choice">
                <input
                  type="checkbox"
                  name="scopes"
                  value="${scope}"
                  ${form.scopes.includes(scope) ? html`checked` : ''}
                />
                <code>${scope}</code> <span class="muted small">${SCOPE_HELP[scope]}</span>
              </label>`,
          )}
        </div>
      </fieldset>
      <button type="submit" class="button button-primary">Create key</button>
    </form>
  </section>`;

const rotation = html`<section class="card" id="rotation">
  <h2>Rotating a key</h2>
  <ol class="steps">
    <li><strong>Create the new key</strong> here, with the same environment and scopes as the old one.</li>
    <li>
      <strong>Switch over:</strong> put the new key in your integration and deploy. Both keys work meanwhile; the old
      key's <em>Last used</em> stops moving once nothing uses it any more.
    </li>
    <li><strong>Revoke the old key.</strong> From then on it gets <code>401</code>.</li>
  </ol>
  <p class="muted small">
    Keys belong on your servers only (<code>Authorization: Bearer &lt;key&gt;</code>), never in client-side code.
  </p>
</section>`;

export const keysPage = (opts: {
  csrf: string;
  keys: ApiKeyRecord[];
  notice?: string;
  error?: string;
  form?: CreateForm;
}): SafeHtml =>
  layout({
    title: 'API keys',
    csrf: opts.csrf,
    body: html`<div class="page-head">
        <h1>API keys</h1>
        <a class="button button-primary" href="#create">Create a key</a>
      </div>
      ${opts.notice ? html`<p class="alert alert-info" role="status">${opts.notice}</p>` : ''}
      <section class="card" id="keys">
        <h2>Your keys</h2>
        ${
          opts.keys.length === 0
            ? html`<p class="muted">No keys yet.</p>`
            : html`<div class="table-wrap">
                <table class="keys">
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Environment</th>
                      <th>Key</th>
                      <th>Scopes</th>
                      <th>Created</th>
                      <th>Last used</th>
                      <th>Status</th>
                      <th><span class="sr-only">Actions</span></th>
                    </tr>
                  </thead>
                  <tbody>
                    ${opts.keys.map(keyRow)}
                  </tbody>
                </table>
              </div>`
        }
      </section>
      <div class="columns">${createForm(opts.csrf, opts.form ?? DEFAULT_FORM, opts.error)} ${rotation}</div>`,
  });

/** The one page that shows a full key: the answer to its creation (no-store, never again). */
export const createdPage = (opts: { csrf: string; key: string; record: ApiKeyRecord }): SafeHtml =>
  layout({
    title: 'New API key',
    csrf: opts.csrf,
    scripts: ['copy.js'],
    body: html`<section class="card narrow-wide">
      <h1>Your new API key</h1>
      <p class="alert alert-warning" role="alert">
        <strong>Copy this key now. It is shown only once.</strong> Only a hash of it is stored, so it cannot be shown
        again. Lost it? Create a new key and revoke this one.
      </p>
      <div class="secret-row">
        <code id="new-key" class="secret">${opts.key}</code>
        <button type="button" class="button button-primary" data-copy="new-key" hidden>Copy</button>
      </div>
      <p id="copy-status" class="muted small" role="status" aria-live="polite"></p>
      <dl class="facts">
        <dt>Name</dt>
        <dd>${opts.record.name}</dd>
        <dt>Environment</dt>
        <dd>${envBadge(opts.record.environment)}</dd>
        <dt>Scopes</dt>
        <dd>
          <ul class="scopes">
            ${opts.record.scopes.map((s) => html`<li>${s}</li>`)}
          </ul>
        </dd>
      </dl>
      <p><a class="button" href="/dashboard/keys">I have copied it: back to API keys</a></p>
    </section>`,
  });

export const confirmRevokePage = (opts: { csrf: string; record: ApiKeyRecord }): SafeHtml =>
  layout({
    title: 'Revoke key',
    csrf: opts.csrf,
    body: html`<section class="card narrow-wide">
      <h1>Revoke “${opts.record.name}”?</h1>
      <dl class="facts">
        <dt>Environment</dt>
        <dd>${envBadge(opts.record.environment)}</dd>
        <dt>Key</dt>
        <dd><code>${maskedKey(opts.record)}</code></dd>
        <dt>Created</dt>
        <dd>${when(opts.record.createdAt)}</dd>
        <dt>Last used</dt>
        <dd>${when(opts.record.lastUsedAt)}</dd>
      </dl>
      <p class="alert alert-warning">
        Every request with this key gets <code>401</code> from now on. This cannot be undone. Rotating? Make sure your
        integration already uses the new key.
      </p>
      <form method="post" action="/dashboard/keys/${encodeURIComponent(opts.record.id)}/revoke" class="button-row">
        ${csrfField(opts.csrf)}
        <button type="submit" class="button button-danger">Revoke key</button>
        <a class="button" href="/dashboard/keys">Cancel</a>
      </form>
    </section>`,
  });
