import { html, type SafeHtml } from './html.ts';

export interface LayoutOptions {
  title: string;
  body: SafeHtml;
  /** The session's CSRF token: present when signed in (shows the nav and the sign-out form). */
  csrf?: string;
  /** Extra scripts, by path under /dashboard/assets (served as files: the CSP allows 'self' only). */
  scripts?: string[];
}

export const csrfField = (token: string): SafeHtml => html`<input type="hidden" name="_csrf" value="${token}" />`;

/** The page shell: header with the product name, navigation and sign-out when signed in. */
export const layout = ({ title, body, csrf, scripts = [] }: LayoutOptions): SafeHtml =>
  html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title} · Voucher service</title>
        <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
        ${scripts.map((s) => html`<script src="/dashboard/assets/${s}" defer></script>`)}
      </head>
      <body>
        <header class="topbar">
          <div class="topbar-inner">
            <a class="brand" href="/dashboard"><span class="brand-mark" aria-hidden="true">%</span> Voucher service</a>
            ${
              csrf === undefined
                ? ''
                : html`<nav class="nav" aria-label="Dashboard">
                    <a href="/dashboard/keys" class="nav-link">API keys</a>
                    <a href="/dashboard/webhooks" class="nav-link">Webhooks</a>
                    <form method="post" action="/dashboard/logout" class="inline-form">
                      ${csrfField(csrf)}
                      <button type="submit" class="button button-quiet">Sign out</button>
                    </form>
                  </nav>`
            }
          </div>
        </header>
        <main class="container">${body}</main>
      </body>
    </html> `;

/** A plain page with a heading and one message: errors (403, 404, 429, 500) and notices. */
export const messagePage = (opts: {
  title: string;
  message: string;
  csrf?: string;
  link?: { href: string; label: string };
}): SafeHtml =>
  layout({
    title: opts.title,
    csrf: opts.csrf,
    body: html`<section class="card narrow">
      <h1>${opts.title}</h1>
      <p>${opts.message}</p>
      ${opts.link ? html`<p><a class="button" href="${opts.link.href}">${opts.link.label}</a></p>` : ''}
    </section>`,
  });

export const loginPage = (opts: { csrf: string; error?: string; notice?: string }): SafeHtml =>
  layout({
    title: 'Sign in',
    body: html`<section class="card narrow">
      <h1>Sign in</h1>
      <p class="muted">
        The operator password is shown once on the service's first start (on its terminal, or in
        <code>first-start-secrets.txt</code> in its data directory), or set with <code>ADMIN_PASSWORD</code>.
      </p>
      ${opts.notice ? html`<p class="alert alert-info" role="status">${opts.notice}</p>` : ''}
      ${opts.error ? html`<p class="alert alert-error" role="alert" id="login-error">${opts.error}</p>` : ''}
      <form method="post" action="/dashboard/login" class="stack">
        ${csrfField(opts.csrf)}
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required autofocus />
        <button type="submit" class="button button-primary">Sign in</button>
      </form>
    </section>`,
  });
