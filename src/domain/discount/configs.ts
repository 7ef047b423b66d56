/**
 * The `config` of the advanced voucher types: one parser per type (in the type's own module),
 * each validating shape and meaning and throwing INVALID_CONFIGURATION `{field, issue,
 * suggestion}` (fields are named relative to `config`, e.g. `tiers`, `tiers[2].max_value`).
 * Called by the voucher decider on create and on update, so a stored config is always valid.
 */
import type { VoucherType } from '../voucher/events.ts';
import { parseBogo, type BogoConfig } from './bogo.ts';
import { parseConditional, type ConditionalConfig } from './conditional.ts';
import { parseStackable, type StackableConfig } from './stackable.ts';
import { parseTiered, type TieredConfig } from './tiered.ts';

export type AdvancedType = 'bogo' | 'tiered' | 'conditional' | 'stackable';
export const ADVANCED_TYPES: readonly AdvancedType[] = ['bogo', 'tiered', 'conditional', 'stackable'];
export const isAdvanced = (type: VoucherType): type is AdvancedType =>
  (ADVANCED_TYPES as readonly string[]).includes(type);

export type ParsedConfig =
  | { type: 'bogo'; config: BogoConfig }
  | { type: 'tiered'; config: TieredConfig }
  | { type: 'conditional'; config: ConditionalConfig }
  | { type: 'stackable'; config: StackableConfig };

/** The typed config (defaults filled in); throws INVALID_CONFIGURATION when it is not valid. */
export const parseConfig = (type: AdvancedType, raw: unknown): ParsedConfig => {
  switch (type) {
    case 'bogo':
      return { type, config: parseBogo(raw) };
    case 'tiered':
      return { type, config: parseTiered(raw) };
    case 'conditional':
      return { type, config: parseConditional(raw) };
    case 'stackable':
      return { type, config: parseStackable(raw) };
  }
};
