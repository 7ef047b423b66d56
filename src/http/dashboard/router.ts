import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import cookieParser from 'cookie-parser';
import { rateLimit } from 'express-rate-limit';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { isScope, type ApiKeyRegistry } from '../../application/apiKeys.ts';
import type { AdminAuth } from '../../application/adminAuth.ts';
import type { EnvContext, Environment } from '../../application/context.ts';
import type { Clock } from '../../domain/clock.ts';
import { dashboardAssets } from './assets.ts';
import {
  confirmRevokePage,
  createdPage,
  DEFAULT_FORM,
  isConfiguredKey,
  keysPage,
  type CreateForm,
} from './keyPages.ts';
import { field, fieldList, send } from './forms.ts';
import { loginPage, messagePage } from './layout.ts';
import {
  cookieOptions,
  LOGIN_CSRF_COOKIE,
  LOGIN_CSRF_MAX_AGE_MS,
  randomToken,
  sameToken,
  SESSION_COOKIE,
  SessionStore,
  type Session,
} from './sessions.ts';
import { webhookRouter } from './webhookRouter.ts';

export interface DashboardDeps {
  keys: ApiKeyRegistry;
  /** The environments whose webhook endpoints the Webhooks section manages. */
  environments: Record<Environment, EnvContext>;
  admin: AdminAuth;
  clock: Clock;
  /** Failed sign-ins allowed per IP and window (default 5 per 15 minutes). */
  loginLimit?: { max: number; windowMs: number };
  sessionIdleMs?: number;
  /** Where the sign-in throttle reports a misconfiguration (express-rate-limit's checks); absent: the console. */
  logger?: Logger;
}

const forbidden = (res: Response, csrf?: string): void =>
  send(
    res,
    messagePage({
      title: 'Form expired',
      csrf,
      message:
        'This form did not come from this dashboard session, or it has expired. Go back, reload the page and try again.',
      link: { href: '/dashboard', label: 'Back to the dashboard' },
    }),
    403,
  );

/**
 * The operator dashboard: sign-in with the admin password, then the API Keys section (create,
 * list, revoke) and the Webhooks section (webhookRouter.ts). Server-rendered HTML, helmet headers with a CSP of 'self' only, sessions in a
 * cookie (`vs_session`), a synchronizer CSRF token on every form, throttled sign-in.
 */
export const dashboardRouter = (deps: DashboardDeps): Router => {
  const router = express.Router();
  const sessions = new SessionStore(deps.clock, deps.sessionIdleMs);
  /** Signs the login form's double-submit cookie; new every start (a restart only expires open login forms). */
  const cookieSecret = randomToken();

  router.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'"],
          fontSrc: ["'self'"],
          connectSrc: ["'self'"],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
          objectSrc: ["'none'"],
        },
      },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    }),
  );
  router.use(cookieParser(cookieSecret));
  router.use(express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 }));
  router.use('/assets', dashboardAssets());

  const currentSession = (req: Request): Session | undefined => sessions.touch(req.cookies?.[SESSION_COOKIE]);

  /** Pages behind sign-in: without a live session, to the login page. */
  const signedIn: RequestHandler = (req, res, next) => {
    const session = currentSession(req);
    if (!session) {
      res.clearCookie(SESSION_COOKIE, cookieOptions(req));
      return res.redirect(303, '/dashboard/login');
    }
    res.locals.session = session;
    if (req.method === 'POST' && !sameToken(field(req, '_csrf'), session.csrf)) return forbidden(res, session.csrf);
    next();
  };
  const session = (res: Response): Session => res.locals.session as Session;

  const showLogin = (
    req: Request,
    res: Response,
    opts: { error?: string; notice?: string } = {},
    status = 200,
  ): void => {
    const csrf = randomToken();
    res.cookie(LOGIN_CSRF_COOKIE, csrf, cookieOptions(req, { signed: true, maxAge: LOGIN_CSRF_MAX_AGE_MS }));
    send(res, loginPage({ csrf, ...opts }), status);
  };

  /**
   * A sign-in counts only once its form is known to come from this dashboard: a post without the
   * login form's token (or with a stale one) is answered 403 with a fresh form and never reaches
   * the throttle, so anyone able to send requests cannot pause sign-in for everybody behind one
   * address without first loading the form (decision 022).
   */
  const loginFormToken: RequestHandler = (req, res, next) => {
    if (!sameToken(field(req, '_csrf'), req.signedCookies?.[LOGIN_CSRF_COOKIE]))
      return showLogin(req, res, { error: 'The sign-in form expired. Please try again.' }, 403);
    next();
  };

  /** Failed sign-ins per client address (`req.ip`: the connection's, or per TRUST_PROXY the forwarded client's). */
  const loginThrottle = rateLimit({
    windowMs: deps.loginLimit?.windowMs ?? 15 * 60_000,
    limit: deps.loginLimit?.max ?? 5,
    skipSuccessfulRequests: true,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    ...(deps.logger
      ? {
          logger: {
            error: (err: unknown, msg?: string) => deps.logger!.error({ err }, msg),
            warn: (err: unknown, msg?: string) => deps.logger!.warn({ err }, msg),
          },
        }
      : {}),
    handler: (_req, res) =>
      send(
        res,
        messagePage({
          title: 'Too many sign-in attempts',
          message: 'Sign-in is paused for this address after several failed attempts. Wait 15 minutes and try again.',
        }),
        429,
      ),
  });

  router.get('/', (req, res) => {
    res.redirect(303, currentSession(req) ? '/dashboard/keys' : '/dashboard/login');
  });

  router.get('/login', (req, res) => {
    if (currentSession(req)) return res.redirect(303, '/dashboard/keys');
    showLogin(req, res, req.query.signed_out === '1' ? { notice: 'You have signed out.' } : {});
  });

  router.post('/login', loginFormToken, loginThrottle, async (req, res) => {
    if (!(await deps.admin.verify(field(req, 'password')))) {
      return showLogin(req, res, { error: 'Wrong password.' }, 401);
    }
    const old = req.cookies?.[SESSION_COOKIE];
    if (typeof old === 'string') sessions.destroy(old);
    const created = sessions.create();
    res.clearCookie(LOGIN_CSRF_COOKIE, cookieOptions(req));
    res.cookie(SESSION_COOKIE, created.id, cookieOptions(req));
    res.redirect(303, '/dashboard/keys');
  });

  router.post('/logout', signedIn, (req, res) => {
    sessions.destroy(session(res).id);
    res.clearCookie(SESSION_COOKIE, cookieOptions(req));
    res.redirect(303, '/dashboard/login?signed_out=1');
  });

  router.get('/keys', signedIn, (req, res) => {
    const revoked = typeof req.query.revoked === 'string' ? deps.keys.get(req.query.revoked) : undefined;
    send(
      res,
      keysPage({
        csrf: session(res).csrf,
        keys: deps.keys.list(),
        notice: revoked?.revokedAt ? `The key “${revoked.name}” is revoked: requests with it now get 401.` : undefined,
      }),
    );
  });

  router.post('/keys', signedIn, async (req, res) => {
    const environment = field(req, 'environment');
    const scopes = fieldList(req, 'scopes');
    const form: CreateForm = {
      name: field(req, 'name').trim().slice(0, 100),
      environment: environment === 'production' ? 'production' : 'sandbox',
      scopes: scopes.filter(isScope),
    };
    const error = !form.name
      ? 'Give the key a name, e.g. where it is used.'
      : environment !== 'production' && environment !== 'sandbox'
        ? 'Choose Production or Sandbox.'
        : scopes.length !== form.scopes.length
          ? 'Choose scopes from the list.'
          : form.scopes.length === 0
            ? 'Choose at least one scope.'
            : undefined;
    if (error) {
      return send(
        res,
        keysPage({ csrf: session(res).csrf, keys: deps.keys.list(), error, form: { ...DEFAULT_FORM, ...form } }),
        400,
      );
    }
    const { key, record } = await deps.keys.create(form.environment, form.name, form.scopes, 'dashboard');
    send(res, createdPage({ csrf: session(res).csrf, key, record }), 201);
  });

  const revocable = (id: string) => {
    const record = deps.keys.get(id);
    return record && !isConfiguredKey(record) ? record : undefined;
  };
  const noSuchKey = (res: Response) =>
    send(
      res,
      messagePage({
        title: 'No such key',
        csrf: session(res).csrf,
        message: 'There is no key with this id that can be revoked here.',
        link: { href: '/dashboard/keys', label: 'Back to API keys' },
      }),
      404,
    );

  router.get('/keys/:id/revoke', signedIn, (req, res) => {
    const record = revocable(String(req.params.id));
    if (!record) return noSuchKey(res);
    if (record.revokedAt) return res.redirect(303, `/dashboard/keys?revoked=${encodeURIComponent(record.id)}`);
    send(res, confirmRevokePage({ csrf: session(res).csrf, record }));
  });

  router.post('/keys/:id/revoke', signedIn, async (req, res) => {
    const record = revocable(String(req.params.id));
    if (!record) return noSuchKey(res);
    await deps.keys.revoke(record.id, 'dashboard');
    res.redirect(303, `/dashboard/keys?revoked=${encodeURIComponent(record.id)}`);
  });

  router.use('/webhooks', signedIn, webhookRouter(deps.environments));

  router.use((req, res) =>
    send(
      res,
      messagePage({
        title: 'Page not found',
        csrf: currentSession(req)?.csrf,
        message: 'There is no dashboard page at this address.',
        link: { href: '/dashboard', label: 'Back to the dashboard' },
      }),
      404,
    ),
  );

  const failed: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const status = (error as { status?: number; type?: string }).status;
    if (status === 413 || status === 400) {
      return send(res, messagePage({ title: 'Bad request', message: 'The form could not be read.' }), status);
    }
    req.log?.error({ err: error, request_id: req.requestId }, 'dashboard error');
    send(
      res,
      messagePage({
        title: 'Something went wrong',
        message: `Something went wrong on our side (request ${req.requestId ?? ''}).`,
      }),
      500,
    );
  };
  router.use(failed);
  return router;
};
