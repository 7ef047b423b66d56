/** The service's entry point (`npm start` runs its compiled form, dist/src/main.js). */
import { failedToStart, runService } from './service.ts';

runService().catch(failedToStart);
