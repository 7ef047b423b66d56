import type { Logger } from 'pino';
import type { EnvContext } from '../application/context.ts';
import type { ApiKeyRecord } from '../application/apiKeys.ts';

declare global {
  namespace Express {
    interface Request {
      log: Logger;
      requestId: string;
      /** performance.now() when the request arrived (for the request log's duration). */
      startedAt: number;
      /** Set by auth: the caller's key and the environment it selects. */
      apiKey: ApiKeyRecord;
      ctx: EnvContext;
    }
  }
}
export {};
