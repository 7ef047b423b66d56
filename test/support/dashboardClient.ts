/** A minimal browser stand-in for the dashboard over fetch: a cookie jar, forms, no redirects followed. */
export interface Page {
  status: number;
  headers: Headers;
  html: string;
  location: string | null;
  setCookies: string[];
}

export const hiddenCsrf = (html: string): string => {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error(`no _csrf field in the page:\n${html.slice(0, 500)}`);
  return match[1]!;
};

/** The Set-Cookie line of one cookie, or undefined. */
export const setCookie = (page: Page, name: string): string | undefined =>
  page.setCookies.find((c) => c.startsWith(`${name}=`));

export class DashboardClient {
  readonly jar = new Map<string, string>();

  /** `headers` go with every request (e.g. the X-Forwarded-For a proxy would add). */
  constructor(
    readonly baseUrl: string,
    readonly headers: Record<string, string> = {},
  ) {}

  get cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>): Promise<Page> {
    const headers: Record<string, string> = { ...this.headers };
    if (this.jar.size) headers.Cookie = this.cookieHeader;
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
      body = params.toString();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const cleared = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (cleared) this.jar.delete(name);
      else this.jar.set(name, pair!.slice(eq + 1).trim());
    }
    return {
      status: res.status,
      headers: res.headers,
      html: await res.text(),
      location: res.headers.get('location'),
      setCookies,
    };
  }

  get(path: string): Promise<Page> {
    return this.request('GET', path);
  }
  post(path: string, form: Record<string, string | string[]>): Promise<Page> {
    return this.request('POST', path, form);
  }

  /** Opens the login form and submits it with this password (the form's own CSRF token unless given). */
  async login(password: string, csrf?: string): Promise<Page> {
    const form = await this.get('/dashboard/login');
    return this.post('/dashboard/login', { _csrf: csrf ?? hiddenCsrf(form.html), password });
  }

  /** Signs in (throws unless it worked) and returns the session's CSRF token from the keys page. */
  async signIn(password: string): Promise<string> {
    const res = await this.login(password);
    if (res.status !== 303 || res.location !== '/dashboard/keys')
      throw new Error(`sign-in failed: ${res.status} ${res.html.slice(0, 300)}`);
    return hiddenCsrf((await this.get('/dashboard/keys')).html);
  }
}
