import type { Projection } from '../src/infrastructure/projector/projection.ts';
import { usageHistory } from './usageHistory.ts';
import { voucherDetails } from './voucherDetails.ts';

/** The read models the service keeps current in-process, rebuilt together by `npm run replay`. */
export const coreProjections: Projection[] = [voucherDetails as Projection, usageHistory as Projection];
export const CORE_CHECKPOINT = 'core';
