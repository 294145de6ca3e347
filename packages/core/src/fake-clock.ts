import type { Clock } from './clock.js';

/** A clock for tests: time moves only through {@link FakeClock.advance} (or sleeps, which advance it). */
export interface FakeClock extends Clock {
  /** Moves time forward by `ms`. */
  advance(ms: number): void;
}

/** Creates a {@link FakeClock} starting at `start`, where every `sleep` advances time instantly. */
export function createFakeClock(start = new Date('2026-01-01T00:00:00Z')): FakeClock {
  let t = 0;
  return {
    now: () => new Date(start.getTime() + t),
    monotonicMs: () => t,
    advance: (ms) => {
      t += ms;
    },
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      t += ms;
      await Promise.resolve();
      signal?.throwIfAborted();
    },
  };
}
