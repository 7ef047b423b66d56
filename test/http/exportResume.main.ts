/**
 * The service as `src/main.ts` starts it, except that export jobs never start: the test kills it
 * while its export is still processing.
 */
import { failedToStart, runService } from '../../src/service.ts';

runService({ beforeExportJob: () => new Promise<void>(() => {}) }).catch(failedToStart);
