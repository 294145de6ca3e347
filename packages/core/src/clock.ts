import { setTimeout as sleepTimer } from 'node:timers/promises';
import { TimeoutError } from '@baton/errors';

/** Time as the engine sees it: injected so unit tests advance a fake clock instead of sleeping. */
export interface Clock {
  /** Wall-clock time, for timestamps in records. */
  now(): Date;
  /** Monotonic milliseconds, for durations and deadlines. */
  monotonicMs(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => new Date(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) => sleepTimer(ms, undefined, signal ? { signal } : {}),
};

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

/** Options of {@link pollUntil}. */
export interface PollOptions {
  readonly clock: Clock;
  /** Pause between checks. @default 250 */
  readonly intervalMs?: number;
  /** Give up after this many milliseconds. */
  readonly timeoutMs: number;
  /** What is awaited, for the timeout message ("controller takeover"). */
  readonly what: string;
  /** Aborts the poll (its reason is thrown). */
  readonly signal?: AbortSignal;
}

/**
 * Calls `check` until it returns a value other than `undefined`, on the injected clock.
 * @returns the value and the milliseconds it took.
 * @throws {TimeoutError} naming `what` and the last state `check` reported through `describe`.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined>,
  options: PollOptions,
  describe: () => string = () => '',
): Promise<{ value: T; elapsedMs: number }> {
  const t0 = options.clock.monotonicMs();
  for (;;) {
    options.signal?.throwIfAborted();
    const value = await check();
    const elapsedMs = options.clock.monotonicMs() - t0;
    if (value !== undefined) return { value, elapsedMs };
    if (elapsedMs >= options.timeoutMs) {
      const last = describe();
      throw new TimeoutError(
        `${options.what} did not happen within ${Math.round(options.timeoutMs / 1000)} s${last ? `: ${last}` : ''}`,
        {
          details: { what: options.what, timeoutMs: options.timeoutMs },
        },
      );
    }
    await options.clock.sleep(options.intervalMs ?? 250, options.signal);
  }
}

/**
 * Runs `call`, giving up after `ms` on the injected clock: a request to an API server that stopped answering
 * (a hung socket) must not stall a revoke that can be retried.
 * @throws {TimeoutError} naming `what` when the deadline passes first; otherwise what `call` throws.
 */
export async function withDeadline<T>(clock: Clock, ms: number, what: string, call: () => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const deadline = clock.sleep(ms, stop.signal).then(
    () => {
      throw new TimeoutError(`${what} got no answer within ${Math.round(ms / 1000)} s`);
    },
    () => undefined as never,
  );
  try {
    return await Promise.race([call(), deadline]);
  } finally {
    stop.abort();
  }
}

/**
 * Calls `attempt` until it succeeds, backing off from `firstDelayMs` (doubling, at most `maxDelayMs`) until
 * `deadlineMs` of the injected clock's monotonic time.
 * @throws the last error when the deadline passes.
 */
export async function retryUntil<T>(
  clock: Clock,
  deadlineMs: number,
  attempt: (n: number) => Promise<T>,
  onRetry: (err: unknown, n: number) => void = () => {},
  firstDelayMs = 500,
  maxDelayMs = 8000,
): Promise<T> {
  let delay = firstDelayMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (clock.monotonicMs() + delay > deadlineMs) throw err;
      onRetry(err, n);
      await clock.sleep(delay);
      delay = Math.min(delay * 2, maxDelayMs);
    }
  }
}
