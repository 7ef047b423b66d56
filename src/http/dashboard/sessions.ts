import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { CookieOptions, Request } from 'express';
import type { Clock } from '../../domain/clock.ts';

export const SESSION_COOKIE = 'vs_session';
/** The pre-session CSRF token of the login form (double-submit, signed). */
export const LOGIN_CSRF_COOKIE = 'vs_login_csrf';
export const SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
export const LOGIN_CSRF_MAX_AGE_MS = 10 * 60 * 1000;

export interface Session {
  readonly id: string;
  /** The synchronizer token every form of this session carries in `_csrf`. */
  readonly csrf: string;
  lastSeen: number;
}

export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Constant-time string comparison (false for anything that is not a non-empty string). */
export const sameToken = (a: unknown, b: unknown): boolean => {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Cookie flags of the dashboard: HttpOnly, SameSite=Strict, Path=/dashboard, and Secure when the
 * request came over HTTPS (`req.secure`; behind a TLS-terminating proxy that needs `trust proxy`).
 * No Max-Age on the session cookie: it ends with the browser, and the server ends it after 8 h idle.
 */
export const cookieOptions = (req: Pick<Request, 'secure'>, extra: Partial<CookieOptions> = {}): CookieOptions => ({
  httpOnly: true,
  sameSite: 'strict',
  path: '/dashboard',
  secure: req.secure,
  ...extra,
});

/**
 * Dashboard sessions, in memory (a restart signs the operator out). A session ends after
 * `idleMs` without a request, on logout, or when the process stops.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly clock: Clock,
    private readonly idleMs = SESSION_IDLE_MS,
  ) {}

  create(): Session {
    this.purge();
    const session: Session = { id: randomToken(), csrf: randomToken(), lastSeen: this.clock.now().getTime() };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id, its idle timer restarted; undefined when unknown or idle too long. */
  touch(id: unknown): Session | undefined {
    if (typeof id !== 'string') return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    const now = this.clock.now().getTime();
    if (now - session.lastSeen >= this.idleMs) {
      this.sessions.delete(id);
      return undefined;
    }
    session.lastSeen = now;
    return session;
  }

  destroy(id: string): void {
    this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private purge(): void {
    const now = this.clock.now().getTime();
    for (const [id, session] of this.sessions) if (now - session.lastSeen >= this.idleMs) this.sessions.delete(id);
  }
}
