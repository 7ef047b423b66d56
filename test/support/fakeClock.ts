import type { Clock } from '../../src/domain/clock.ts';

/** A clock that moves only when told to. */
export class FakeClock implements Clock {
  private current: number;
  constructor(start: string | Date = '2026-01-15T12:00:00Z') {
    this.current = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(at: string | Date): void {
    this.current = new Date(at).getTime();
  }
}
