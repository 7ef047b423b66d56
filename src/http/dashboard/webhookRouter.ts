import express, { type Request, type Response, type Router } from 'express';
import type { EnvContext, Environment } from '../../application/context.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  MAX_ENDPOINTS,
  rotateSecret,
  updateEndpoint,
} from '../../application/webhooks/endpoints.ts';
import {
  listDeliveries,
  recoverDeliveries,
  resendDelivery,
  sendTestEvent,
} from '../../application/webhooks/deliveries.ts';
import { DELIVERY_STATUSES } from '../../domain/webhooks/delivery.ts';
import { DomainError } from '../../domain/errors.ts';
import { checkUrl, type TargetPolicy } from '../../domain/webhooks/endpoint.ts';
import { field, fieldList, send } from './forms.ts';
import { messagePage } from './layout.ts';
import type { Session } from './sessions.ts';
import {
  confirmDeletePage,
  endpointPage,
  endpointPath,
  secretPage,
  webhooksPage,
  type DeliveryView,
  type EndpointForm,
  type EndpointView,
  type FieldProblem,
} from './webhookPages.ts';

const ENDPOINT_ID = /^we_[A-Za-z0-9]{1,64}$/;
const DELIVERY_ID = /^msg_[A-Za-z0-9]{1,64}$/;
const PAGE_SIZE = 20;
const MAX_OFFSET = 1_000_000;
/** The recover form's default: failed deliveries of the last day. */
const DEFAULT_RECOVER_WINDOW_MS = 24 * 3_600_000;
const MAX_EVENTS = 20;
const MAX_EVENT_LENGTH = 64;
const MAX_DESCRIPTION = 500;

/** The notices a redirect may ask for (`?done=`): fixed texts, nothing from the request is shown. */
const NOTICES: Record<string, string> = {
  resent: 'A new attempt of the delivery is on its way.',
  test: 'A webhook.test event is on its way to this endpoint.',
  enabled: 'The endpoint is enabled: new events are delivered to it again.',
  disabled: 'The endpoint is disabled: it gets no deliveries until you enable it.',
  deleted: 'The endpoint is deleted: it gets no further deliveries.',
};

/** `2026-01-15T12:00` in UTC (the value of a datetime-local input). */
const minuteOf = (date: Date): string => date.toISOString().slice(0, 16);

/**
 * The recover form's time, read as UTC: `YYYY-MM-DDTHH:MM`, optionally with seconds, fraction and
 * `Z`. Undefined when it is not a real date and time (2026-02-31 included).
 */
export const parseSince = (raw: string): string | undefined => {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?Z?$/.exec(raw.trim());
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  const same =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    date.getUTCHours() === h &&
    date.getUTCMinutes() === mi &&
    date.getUTCSeconds() === s;
  return same ? date.toISOString().replace('.000Z', 'Z') : undefined;
};

/** The `{field, message}` problems of a refused input; undefined for any other error. */
const problemsOf = (error: unknown): FieldProblem[] | undefined => {
  if (!(error instanceof DomainError) || error.code !== 'INVALID_REQUEST') return undefined;
  const details = Array.isArray(error.details) ? error.details : [];
  const listed = details
    .filter((d) => typeof d.field === 'string' && typeof d.message === 'string')
    .map((d) => ({ field: d.field as string, message: d.field === 'body' ? error.message : (d.message as string) }));
  return listed.length > 0 ? listed : [{ field: 'body', message: error.message }];
};

/** The endpoint decider's URL rules, checked first so that every problem of the form shows at once. */
const urlProblems = (url: string, policy: TargetPolicy): FieldProblem[] => {
  try {
    checkUrl(url, policy);
    return [];
  } catch (error) {
    const problems = problemsOf(error);
    if (!problems) throw error;
    return problems;
  }
};

const isNotFound = (error: unknown): boolean =>
  error instanceof DomainError && (error.code === 'WEBHOOK_NOT_FOUND' || error.code === 'WEBHOOK_DELIVERY_NOT_FOUND');

/**
 * The Webhooks section: per environment (`/webhooks/sandbox`, `/webhooks/production`), the
 * endpoints with their status and a form to add one; per endpoint, its recent deliveries
 * (attempts, response codes, next retry) with resend, recovery since a time, a test event,
 * secret rotation, enable/disable and delete. Calls the application's webhook functions directly;
 * mounted behind sign-in and the session's CSRF check.
 */
export const webhookRouter = (environments: Record<Environment, EnvContext>): Router => {
  const router = express.Router();
  const csrf = (res: Response): string => (res.locals.session as Session).csrf;
  const meta = (req: Request) => ({ correlationId: req.requestId });

  const envOf = (req: Request): Environment | undefined => {
    const env = String(req.params.env);
    return env === 'sandbox' || env === 'production' ? env : undefined;
  };

  const notFound = (res: Response, what = 'There is no webhook endpoint with this id in this environment.') =>
    send(
      res,
      messagePage({
        title: 'Not found',
        csrf: csrf(res),
        message: what,
        link: { href: '/dashboard/webhooks', label: 'Back to webhooks' },
      }),
      404,
    );

  const notDelivering = (res: Response, environment: Environment, id: string) =>
    send(
      res,
      messagePage({
        title: 'Deliveries unavailable',
        csrf: csrf(res),
        message: 'This process does not deliver webhooks, so it cannot send, resend or recover deliveries.',
        link: { href: endpointPath(environment, id), label: 'Back to the endpoint' },
      }),
      503,
    );

  const endpointOf = async (ctx: EnvContext, id: string): Promise<EndpointView | undefined> => {
    if (!ENDPOINT_ID.test(id)) return undefined;
    try {
      return (await getEndpoint(ctx, id)) as unknown as EndpointView;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };

  const showList = async (
    res: Response,
    environment: Environment,
    opts: { notice?: string; problems?: FieldProblem[]; form?: EndpointForm } = {},
    status = 200,
  ): Promise<void> => {
    const page = await listEndpoints(environments[environment], MAX_ENDPOINTS, 0);
    send(
      res,
      webhooksPage({
        csrf: csrf(res),
        environment,
        endpoints: page.data as unknown as EndpointView[],
        total: page.total,
        max: MAX_ENDPOINTS,
        ...opts,
      }),
      status,
    );
  };

  const showEndpoint = async (
    req: Request,
    res: Response,
    environment: Environment,
    endpoint: EndpointView,
    opts: { since?: string; problems?: FieldProblem[] } = {},
    status = 200,
  ): Promise<void> => {
    const ctx = environments[environment];
    const filter = DELIVERY_STATUSES.find((s) => s === req.query.status);
    const offset = Math.min(MAX_OFFSET, Math.max(0, Number.parseInt(String(req.query.offset ?? '0'), 10) || 0));
    const page = ctx.webhooks.deliveries
      ? await listDeliveries(ctx, endpoint.id, { limit: PAGE_SIZE, offset, ...(filter ? { status: filter } : {}) })
      : undefined;
    const done = typeof req.query.done === 'string' ? req.query.done : '';
    const recovered = /^\d{1,6}$/.test(String(req.query.count ?? '')) ? Number(req.query.count) : undefined;
    const notice =
      done === 'recovered' && recovered !== undefined
        ? `${recovered} failed ${recovered === 1 ? 'delivery is' : 'deliveries are'} queued again.`
        : NOTICES[done];
    send(
      res,
      endpointPage({
        csrf: csrf(res),
        environment,
        endpoint,
        listing: page && {
          deliveries: page.data as unknown as DeliveryView[],
          total: page.total,
          offset,
          limit: PAGE_SIZE,
          status: filter,
        },
        notice,
        since: opts.since ?? minuteOf(new Date(ctx.clock.now().getTime() - DEFAULT_RECOVER_WINDOW_MS)),
        problems: opts.problems,
      }),
      status,
    );
  };

  /** Runs `fn` with the environment and the endpoint of the path; 404 when either is unknown. */
  const withEndpoint =
    (fn: (req: Request, res: Response, environment: Environment, endpoint: EndpointView) => Promise<void>) =>
    async (req: Request, res: Response): Promise<void> => {
      const environment = envOf(req);
      const endpoint = environment && (await endpointOf(environments[environment], String(req.params.id)));
      if (!environment || !endpoint) return notFound(res);
      try {
        await fn(req, res, environment, endpoint);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        notFound(res, (error as DomainError).message + '.');
      }
    };

  const backTo = (res: Response, environment: Environment, id: string, query: string): void =>
    res.redirect(303, `${endpointPath(environment, id)}?${query}`);

  router.get('/', (_req, res) => res.redirect(303, '/dashboard/webhooks/sandbox'));

  router.get('/:env', async (req, res) => {
    const environment = envOf(req);
    if (!environment) return notFound(res, 'There is no such environment: use Sandbox or Production.');
    await showList(res, environment, { notice: req.query.done === 'deleted' ? NOTICES.deleted : undefined });
  });

  router.post('/:env', async (req, res) => {
    const environment = envOf(req);
    if (!environment) return notFound(res, 'There is no such environment: use Sandbox or Production.');
    const form: EndpointForm = {
      url: field(req, 'url').trim().slice(0, 4096),
      description: field(req, 'description').trim().slice(0, 1000),
      events: [...new Set(fieldList(req, 'events'))].slice(0, MAX_EVENTS + 1),
    };
    const problems: FieldProblem[] = [];
    const ctx = environments[environment];
    if (!form.url) problems.push({ field: 'url', message: 'is required, e.g. https://example.com/webhooks' });
    else problems.push(...urlProblems(form.url, ctx.webhooks.policy));
    if (form.description.length > MAX_DESCRIPTION)
      problems.push({ field: 'description', message: `must be at most ${MAX_DESCRIPTION} characters` });
    if (form.events.length === 0) problems.push({ field: 'events', message: 'must include at least one event type' });
    else if (form.events.length > MAX_EVENTS || form.events.some((e) => e.length > MAX_EVENT_LENGTH))
      problems.push({ field: 'events', message: 'must be chosen from the list' });
    if (problems.length > 0) return showList(res, environment, { problems, form }, 400);
    let created: Record<string, unknown>;
    try {
      created = await createEndpoint(
        ctx,
        { url: form.url, events: form.events, ...(form.description ? { description: form.description } : {}) },
        meta(req),
      );
    } catch (error) {
      const refused = problemsOf(error);
      if (!refused) throw error;
      return showList(res, environment, { problems: refused, form }, 400);
    }
    const { secret, ...endpoint } = created;
    send(
      res,
      secretPage({
        csrf: csrf(res),
        environment,
        endpoint: endpoint as unknown as EndpointView,
        secret: String(secret),
      }),
      201,
    );
  });

  router.get(
    '/:env/:id',
    withEndpoint((req, res, environment, endpoint) => showEndpoint(req, res, environment, endpoint)),
  );

  router.post(
    '/:env/:id/deliveries/:deliveryId/resend',
    withEndpoint(async (req, res, environment, endpoint) => {
      const deliveryId = String(req.params.deliveryId);
      if (!DELIVERY_ID.test(deliveryId)) return notFound(res, 'There is no such delivery of this endpoint.');
      if (!environments[environment].webhooks.deliveries) return notDelivering(res, environment, endpoint.id);
      await resendDelivery(environments[environment], endpoint.id, deliveryId);
      backTo(res, environment, endpoint.id, 'done=resent#deliveries');
    }),
  );

  router.post(
    '/:env/:id/recover',
    withEndpoint(async (req, res, environment, endpoint) => {
      if (!environments[environment].webhooks.deliveries) return notDelivering(res, environment, endpoint.id);
      const raw = field(req, 'since');
      const since = parseSince(raw.slice(0, 64));
      if (!since) {
        const problem: FieldProblem = raw.trim()
          ? { field: 'since', message: 'must be a date and time in UTC, e.g. 2026-01-15T12:00' }
          : { field: 'since', message: 'is required: failed deliveries created at or after it are recovered' };
        return showEndpoint(req, res, environment, endpoint, { since: raw.slice(0, 40), problems: [problem] }, 400);
      }
      const { recovered } = await recoverDeliveries(environments[environment], endpoint.id, since);
      backTo(res, environment, endpoint.id, `done=recovered&count=${recovered}#deliveries`);
    }),
  );

  router.post(
    '/:env/:id/test',
    withEndpoint(async (_req, res, environment, endpoint) => {
      if (!environments[environment].webhooks.deliveries) return notDelivering(res, environment, endpoint.id);
      await sendTestEvent(environments[environment], endpoint.id);
      backTo(res, environment, endpoint.id, 'done=test#deliveries');
    }),
  );

  router.post(
    '/:env/:id/rotate',
    withEndpoint(async (req, res, environment, endpoint) => {
      const rotated = await rotateSecret(environments[environment], endpoint.id, meta(req));
      send(
        res,
        secretPage({
          csrf: csrf(res),
          environment,
          endpoint,
          secret: rotated.secret,
          previousExpiresAt: rotated.previous_secret_expires_at,
        }),
      );
    }),
  );

  router.post(
    '/:env/:id/status',
    withEndpoint(async (req, res, environment, endpoint) => {
      const status = field(req, 'status');
      if (status !== 'enabled' && status !== 'disabled')
        return send(
          res,
          messagePage({
            title: 'Bad request',
            csrf: csrf(res),
            message: 'Status must be enabled or disabled.',
            link: { href: endpointPath(environment, endpoint.id), label: 'Back to the endpoint' },
          }),
          400,
        );
      await updateEndpoint(environments[environment], endpoint.id, { status }, meta(req));
      backTo(res, environment, endpoint.id, `done=${status}`);
    }),
  );

  router.get(
    '/:env/:id/delete',
    withEndpoint(async (_req, res, environment, endpoint) => {
      send(res, confirmDeletePage({ csrf: csrf(res), environment, endpoint }));
    }),
  );

  router.post(
    '/:env/:id/delete',
    withEndpoint(async (req, res, environment, endpoint) => {
      await deleteEndpoint(environments[environment], endpoint.id, meta(req));
      res.redirect(303, `/dashboard/webhooks/${environment}?done=deleted`);
    }),
  );

  return router;
};
