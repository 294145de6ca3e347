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
