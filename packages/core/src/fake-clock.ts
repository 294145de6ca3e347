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

/**
 * A {@link FakeClock} whose sleeps first let everything already answered settle (one macrotask), then advance: a
 * deadline (`withDeadline`) loses to a scripted API call that answers and wins over one that hangs, as on the real
 * clock, while time still moves only by the test.
 */
export function createSettlingFakeClock(start?: Date): FakeClock {
  const clock = createFakeClock(start);
  return {
    ...clock,
    sleep: async (ms, signal) => {
      await new Promise((r) => setImmediate(r));
      await clock.sleep(ms, signal);
    },
  };
}
