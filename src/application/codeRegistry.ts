import { DomainError } from '../domain/errors.ts';
import { codeStream, voucherStream, type VoucherCodeClaimed } from '../domain/voucher/events.ts';
import type { EnvironmentEvent } from './events.ts';
import { WrongExpectedRevisionError, type EventStore, type RecordedEvent } from '../core/eventStore.ts';

/** A claim whose voucher was never created (the process died in between) is free after this. */
export const ABANDONED_CLAIM_MS = 60_000;

/**
 * Code uniqueness on the write side. A code belongs to the voucher named by the last
 * `VoucherCodeClaimed` on the stream `voucherCode-<lower-case code>`, appended with "no stream"
 * expected, so two creates racing for one code (in any number of processes) cannot both win.
 * Creating a voucher is two appends (claim, then `VoucherCreated`): a claim left without its
 * voucher by a crash is taken over after ABANDONED_CLAIM_MS.
 */
export class CodeRegistry {
  /** Lower-case code → voucher id, for claims whose voucher exists (they never change). */
  private readonly known = new Map<string, string>();

  constructor(private readonly store: EventStore<EnvironmentEvent>) {}

  /** The voucher id owning the code, or undefined. */
  async lookup(code: string): Promise<string | undefined> {
    const key = code.toLowerCase();
    const cached = this.known.get(key);
    if (cached !== undefined) return cached;
    const claim = await this.lastClaim(code);
    if (!claim || !(await this.voucherExists(claim.data.voucherId))) return undefined;
    this.known.set(key, claim.data.voucherId);
    return claim.data.voucherId;
  }

  /** Claims the code for the voucher or throws DUPLICATE_VOUCHER_CODE. */
  async claim(code: string, voucherId: string, now: Date): Promise<void> {
    const event: VoucherCodeClaimed = {
      type: 'VoucherCodeClaimed',
      data: { code, voucherId, claimedAt: now.toISOString() },
    };
    try {
      await this.store.appendToStream(codeStream(code), [event], { expectedRevision: 'no_stream' });
      return;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
    const claim = await this.lastClaim(code);
    const owner = claim?.data.voucherId;
    const abandoned =
      claim !== undefined &&
      now.getTime() - Date.parse(claim.data.claimedAt) > ABANDONED_CLAIM_MS &&
      !(await this.voucherExists(claim.data.voucherId));
    if (!abandoned) throw duplicate(claim?.data.code ?? code, owner);
    try {
      await this.store.appendToStream(codeStream(code), [event], { expectedRevision: claim.revision });
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError)
        throw duplicate(code, (await this.lastClaim(code))?.data.voucherId);
      throw error;
    }
  }

  private async lastClaim(code: string): Promise<RecordedEvent<VoucherCodeClaimed> | undefined> {
    const events = await this.store.readStream<VoucherCodeClaimed>(codeStream(code));
    return events.at(-1);
  }

  private async voucherExists(voucherId: string): Promise<boolean> {
    return (await this.store.readStream(voucherStream(voucherId), { maxCount: 1 })).length > 0;
  }
}

const duplicate = (code: string, voucherId: string | undefined): DomainError =>
  new DomainError('DUPLICATE_VOUCHER_CODE', `A voucher with code ${code} already exists`, {
    code,
    voucher_id: voucherId ?? null,
  });
