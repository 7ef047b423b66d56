import type { AnyProjection, Projection } from '../src/infrastructure/projector/projection.ts';
import { analytics } from './analytics.ts';
import { exportsProjection } from './exports.ts';
import { usageHistory } from './usageHistory.ts';
import { voucherDetails } from './voucherDetails.ts';

/** The read models the service keeps current in-process, rebuilt together by `npm run replay`. */
export const coreProjections: Projection[] = [voucherDetails as Projection, usageHistory as Projection];
export const CORE_CHECKPOINT = 'core';

/**
 * The second group, with its own runner and checkpoint: analytics aggregates and export records.
 * A separate checkpoint keeps the core read models (and read-your-writes after apply) independent
 * of the heavier analytics fold, and lets each group be rebuilt on its own.
 */
export const analyticsProjections: AnyProjection[] = [analytics, exportsProjection as Projection];
export const ANALYTICS_CHECKPOINT = 'analytics';

/** Every group `npm run replay` rebuilds. */
export const PROJECTION_GROUPS: Array<{ name: string; projections: AnyProjection[]; checkpoint: string }> = [
  { name: 'core', projections: coreProjections, checkpoint: CORE_CHECKPOINT },
  { name: 'analytics', projections: analyticsProjections, checkpoint: ANALYTICS_CHECKPOINT },
];
