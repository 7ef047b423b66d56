import type { ExportView } from '../../projections/exports.ts';
import { exportStream, type ExportEvent } from '../../domain/analytics/events.ts';
import { isoSeconds, type Clock } from '../../domain/clock.ts';
import { WrongExpectedRevisionError, type EventStore } from '../../core/eventStore.ts';
import type { EnvironmentEvent } from '../events.ts';
import type { ProjectorHandle } from '../../core/projectionRunner.ts';
import type { ReadStore } from '../../core/readStore.ts';
import { randomBase62 } from '../ids.ts';
import type { KvStore } from '../../core/kvStore.ts';
import { QuotaExceededError, type Quotas } from '../quotas.ts';
import {
  EXPORT_TTL_MS,
  completeExport,
  downloadRefusal,
  expireExport,
  exportFileName,
  exportNotFound,
  exportState,
  failExport,
  requestExport,
  type ExportRequest,
} from './decide.ts';
import { CONTENT_TYPES, ExportFiles } from './files.ts';
import { exportRows } from './rows.ts';

const SWEEP_INTERVAL_MS = 60_000;
/** How long a job waits for the analytics to reach its request before it fails (analytics_behind). */
export const ANALYTICS_WAIT_MS = 60_000;

export interface ExportJobsDeps {
  events: EventStore<EnvironmentEvent>;
  /** The core read models (vouchers). */
  reads: ReadStore;
  /** The analytics group's read models (export records, daily aggregates). */
  analyticsReads: ReadStore;
  clock: Clock;
  analytics: ProjectorHandle;
  /** DATA_DIR/<env>/exports */
  dir: string;
  logger?: { error(obj: object, msg: string): void };
  /**
   * Awaited before each job starts (e.g. a test holding jobs back to stop the process while an
   * export is processing); `stop()` does not wait for it.
   */
  beforeJob?: (exportId: string) => Promise<void>;
  /** Where each export's requesting key is recorded, for the per-key quotas (namespace `exports`). */
  kv: KvStore;
  quotas: Pick<Quotas, 'pendingExports' | 'exportFiles'>;
}

/** The KV namespace of the records `export id → requesting key`, for the per-key quotas. */
const OWNERS = 'exports';
/** The record of an export still processing has no expiry yet: it gets the file's once completed. */
const UNTIL_COMPLETED = Number.MAX_SAFE_INTEGER;

/**
 * The export worker. An export's record lives on its stream (see decide.ts), so it survives
 * restarts; its file lives in `dir` (files.ts). Jobs run one at a time in the background; on
 * start, exports still `processing` (the process stopped during one) are run again. The sweeper
 * removes files past their expiry (clock time) and records it.
 */
export class ExportJobs {
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly stopping: Promise<void>;
  private signalStop!: () => void;
  private sweeper?: NodeJS.Timeout;
  private readonly files: ExportFiles;
  /** The create in progress: creates run one at a time (see create). */
  private creating: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: ExportJobsDeps) {
    this.files = new ExportFiles(deps.dir);
    this.stopping = new Promise((resolve) => {
      this.signalStop = resolve;
    });
  }

  /** Resumes unfinished exports and starts the sweeper; call once the analytics runner runs. */
  async start(): Promise<void> {
    this.files.prepare();
    this.sweeper = setInterval(() => {
      void this.sweep().catch((err: unknown) => this.deps.logger?.error({ err }, 'export sweep failed'));
    }, SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    void this.resume().catch((err: unknown) => this.deps.logger?.error({ err }, 'resuming exports failed'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.signalStop();
    await this.queue;
  }

  /** Exports still processing after a restart are run again (the read model first catches up with the log). */
  async resume(): Promise<string[]> {
    await this.deps.analytics.waitFor(await this.deps.events.headPosition(), 60_000);
    const pending = await this.deps.analyticsReads.find<ExportView>(
      'exports',
      { status: 'processing' },
      { sort: [['requested_at', 1]] },
    );
    for (const view of pending) this.enqueue(view.id);
    return pending.map((v) => v.id);
  }

  /**
   * Records the export and queues its job. With `owner` (the requesting API key) it first checks
   * the key's quotas: 429 QUOTA_EXCEEDED when the key's files kept plus exports processing reach
   * `exportFiles`, or its exports processing reach `pendingExports`. Creates run one at a time,
   * so that the check and the record of the new export go together.
   */
  async create(request: ExportRequest, owner?: string): Promise<ExportView> {
    const created = this.creating.then(() => this.createWithinQuotas(request, owner));
    this.creating = created.catch(() => undefined);
    return created;
  }

  private async createWithinQuotas(request: ExportRequest, owner: string | undefined): Promise<ExportView> {
    const now = this.deps.clock.now();
    const event = requestExport(request, `export_${randomBase62(20)}`, now);
    const exportId = event.data.exportId;
    if (owner !== undefined) {
      this.checkQuotas(await this.usage(owner), now);
      await this.deps.kv.putOwned(OWNERS, exportId, {}, UNTIL_COMPLETED, { owner, limit: Infinity });
    }
    try {
      await this.deps.events.appendToStream(exportStream(exportId), [event], { expectedRevision: 'no_stream' });
    } catch (error) {
      if (owner !== undefined) await this.deps.kv.delete(OWNERS, exportId);
      throw error;
    }
    this.enqueue(exportId);
    return exportState([event], this.deps.clock.now())!;
  }

  /**
   * The key's exports as its quotas count them, from the export streams: processing, and
   * completed with the file kept. A record gets its file's expiry once completed; the records of
   * exports failed or expired (or never written) are dropped.
   */
  private async usage(owner: string): Promise<{ processing: ExportView[]; files: ExportView[] }> {
    const processing: ExportView[] = [];
    const files: ExportView[] = [];
    for (const { key, expiresAt } of await this.deps.kv.ownedKeys(OWNERS, owner)) {
      const events = await this.deps.events.readStream<ExportEvent>(exportStream(key));
      const view = exportState(events, this.deps.clock.now());
      if (view?.status === 'processing') processing.push(view);
      else if (view?.status === 'completed') {
        files.push(view);
        const until = Date.parse(view.expires_at!);
        if (until !== expiresAt) await this.deps.kv.putOwned(OWNERS, key, {}, until, { owner, limit: Infinity });
      } else await this.deps.kv.delete(OWNERS, key);
    }
    return { processing, files };
  }

  /** QUOTA_EXCEEDED export_files (checked first: waiting for a job does not free a file), then pending_exports. */
  private checkQuotas({ processing, files }: { processing: ExportView[]; files: ExportView[] }, now: Date): void {
    const { pendingExports, exportFiles } = this.deps.quotas;
    const earliest = (times: string[]): number => Math.min(...times.map((t) => Date.parse(t)));
    const nextCompletion = (): number => earliest(processing.map((v) => v.estimated_completion));
    if (processing.length + files.length >= exportFiles) {
      const nextExpiry =
        files.length > 0 ? earliest(files.map((v) => v.expires_at!)) : nextCompletion() + EXPORT_TTL_MS;
      throw new QuotaExceededError('export_files', exportFiles, processing.length + files.length, nextExpiry, now);
    }
    if (processing.length >= pendingExports) {
      throw new QuotaExceededError('pending_exports', pendingExports, processing.length, nextCompletion(), now);
    }
  }

  /** The export as its stream tells it, with expiry by the clock; EXPORT_NOT_FOUND when unknown. */
  async get(exportId: string): Promise<{ view: ExportView; revision: number }> {
    const events = /^export_[A-Za-z0-9]{1,64}$/.test(exportId)
      ? await this.deps.events.readStream<ExportEvent>(exportStream(exportId))
      : [];
    const view = exportState(events, this.deps.clock.now());
    if (!view) throw exportNotFound(exportId);
    return { view, revision: events.at(-1)!.revision };
  }

  /** The file to send, or 409 EXPORT_NOT_READY / 410 EXPORT_EXPIRED (an expired file is removed first). */
  async download(exportId: string): Promise<{ file: string; contentType: string; fileName: string }> {
    const { view, revision } = await this.get(exportId);
    if (view.status === 'expired') await this.expire(view, revision);
    const refusal = downloadRefusal(view);
    if (refusal) throw refusal;
    return {
      file: this.files.pathOf(view.file_name!),
      contentType: CONTENT_TYPES[view.format],
      fileName: view.file_name!,
    };
  }

  /** Removes the files of completed exports past expires_at and records their expiry; returns their ids. */
  async sweep(): Promise<string[]> {
    const now = isoSeconds(this.deps.clock.now());
    const due = await this.deps.analyticsReads.find<ExportView>('exports', {
      status: 'completed',
      expires_at: { $lte: now },
    });
    for (const view of due) {
      const { view: current, revision } = await this.get(view.id);
      if (current.status === 'expired') await this.expire(current, revision);
    }
    return due.map((v) => v.id);
  }

  private async expire(view: ExportView, revision: number): Promise<void> {
    if (view.file_name) this.files.remove(view.file_name);
    const expired = expireExport(view, this.deps.clock.now());
    if (expired) await this.append(view.id, revision, expired);
  }

  private enqueue(exportId: string): void {
    this.queue = this.queue
      .then(() => this.run(exportId))
      .catch((err: unknown) => this.deps.logger?.error({ err, export_id: exportId }, 'export job failed'));
  }

  private async run(exportId: string): Promise<void> {
    if (this.deps.beforeJob && !this.stopped) await Promise.race([this.deps.beforeJob(exportId), this.stopping]);
    if (this.stopped) return;
    const { view, revision } = await this.get(exportId);
    if (view.status !== 'processing') return;
    const requested = (await this.deps.events.readStream(exportStream(exportId), { maxCount: 1 }))[0]!;
    // The rows include every application and attempt logged before the request: analytics that
    // do not reach it in time fail the export (analytics_behind) rather than complete it short.
    const caughtUp = await Promise.race([
      this.deps.analytics.waitFor(requested.position, ANALYTICS_WAIT_MS),
      this.stopping.then(() => false),
    ]);
    if (this.stopped) return; // resumed on the next start
    if (!caughtUp) {
      this.deps.logger?.error(
        { export_id: exportId, position: requested.position, waited_ms: ANALYTICS_WAIT_MS },
        'export failed: the analytics projection is behind its request',
      );
      await this.append(exportId, revision, failExport(view, this.deps.clock.now(), 'analytics_behind'));
      return;
    }
    try {
      const rows = await exportRows(this.deps.reads, this.deps.analyticsReads, view);
      const fileName = exportFileName(view);
      const meta = {
        exportId,
        generatedAt: isoSeconds(this.deps.clock.now()),
        startDay: view.start_day,
        endDay: view.end_day,
        metrics: view.metrics,
      };
      const fileSize = await this.files.write(fileName, view.format, rows, meta, () => this.stopped);
      if (fileSize === null) return; // stopped: resumed on the next start
      await this.append(
        exportId,
        revision,
        completeExport(view, { fileName, fileSize, recordCount: rows.length }, this.deps.clock.now()),
      );
    } catch (error) {
      this.deps.logger?.error({ err: error, export_id: exportId }, 'export generation failed');
      await this.append(exportId, revision, failExport(view, this.deps.clock.now()));
    }
  }

  /** Appends to the export's stream at `revision`; a concurrent writer got there first: nothing to do. */
  private async append(exportId: string, revision: number, event: ExportEvent): Promise<void> {
    try {
      await this.deps.events.appendToStream(exportStream(exportId), [event], {
        expectedRevision: revision,
      });
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }
}
