import type { AnyProjection } from '../core/projection.ts';
import type { GroupDefinition } from '../core/projectionGroups.ts';
import { analytics } from './analytics.ts';
import { exportsProjection } from './exports.ts';
import { usageHistory } from './usageHistory.ts';
import { voucherDetails } from './voucherDetails.ts';
import { voucherUsage } from './voucherUsage.ts';

/** The read models the service keeps current in-process, rebuilt together by `npm run replay`. */
export const coreProjections: AnyProjection[] = [voucherDetails, voucherUsage, usageHistory];
/** v2: usage counts in their own collection (voucherUsage.ts) instead of the voucher documents. */
export const CORE_CHECKPOINT = 'core.v2';
export const CORE_PREVIOUS_CHECKPOINTS = ['core'];

/**
 * The second group, with its own runner and checkpoint: analytics aggregates and export records.
 * A separate checkpoint keeps the core read models (and read-your-writes after apply) independent
 * of the heavier analytics fold, and lets each group be rebuilt on its own.
 */
export const analyticsProjections: AnyProjection[] = [analytics, exportsProjection];
/**
 * A group's checkpoint is renamed whenever its fold changes, so that read models written by an
 * older fold are rebuilt on the next start (see retireOutdatedReadModels). v2: the daily gap
 * histograms behind unique customers and repeat usage.
 */
export const ANALYTICS_CHECKPOINT = 'analytics.v2';
export const ANALYTICS_PREVIOUS_CHECKPOINTS = ['analytics'];

/** A projection group: its runner's checkpoint, and the names its checkpoint had before. */
export type ProjectionGroup = GroupDefinition;

export const CORE_GROUP: ProjectionGroup = {
  name: 'core',
  projections: coreProjections,
  checkpoint: CORE_CHECKPOINT,
  previous: CORE_PREVIOUS_CHECKPOINTS,
};
export const ANALYTICS_GROUP: ProjectionGroup = {
  name: 'analytics',
  projections: analyticsProjections,
  checkpoint: ANALYTICS_CHECKPOINT,
  previous: ANALYTICS_PREVIOUS_CHECKPOINTS,
};

/** Every group the service runs and `npm run replay` rebuilds. */
export const PROJECTION_GROUPS: ProjectionGroup[] = [CORE_GROUP, ANALYTICS_GROUP];
