import type { AnyProjection } from '../core/projection.ts';
import type { GroupDefinition } from '../core/projectionGroups.ts';
import { analytics } from './analytics.ts';
import { exportsProjection } from './exports.ts';
import { usageHistory } from './usageHistory.ts';
import { voucherDetails } from './voucherDetails.ts';
import { voucherUsage } from './voucherUsage.ts';
import { webhookEndpoints } from './webhookEndpoints.ts';

/** The read models the service keeps current in-process, rebuilt together by `npm run replay`. */
export const coreProjections: AnyProjection[] = [voucherDetails, voucherUsage, usageHistory, webhookEndpoints];
/** The core group's checkpoint in read.db. */
export const CORE_CHECKPOINT = 'core.v2';

/**
 * The second group, with its own runner and checkpoint: analytics aggregates and export records.
 * A separate checkpoint keeps the core read models (and read-your-writes after apply) independent
 * of the heavier analytics fold, and lets each group be rebuilt on its own.
 */
export const analyticsProjections: AnyProjection[] = [analytics, exportsProjection];
/** The analytics group's checkpoint in analytics.db. */
export const ANALYTICS_CHECKPOINT = 'analytics.v2';

/** A projection group: its name, projections and its runner's checkpoint. */
export type ProjectionGroup = GroupDefinition;

export const CORE_GROUP: ProjectionGroup = {
  name: 'core',
  projections: coreProjections,
  checkpoint: CORE_CHECKPOINT,
};
export const ANALYTICS_GROUP: ProjectionGroup = {
  name: 'analytics',
  projections: analyticsProjections,
  checkpoint: ANALYTICS_CHECKPOINT,
};

/** Every group the service runs and `npm run replay` rebuilds. */
export const PROJECTION_GROUPS: ProjectionGroup[] = [CORE_GROUP, ANALYTICS_GROUP];
