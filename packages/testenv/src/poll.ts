import { setTimeout as sleep } from 'node:timers/promises';
import { TimeoutError } from '@baton/errors';

/** Options of {@link pollUntil}. */
export interface PollOptions {
  /** Deadline for the whole wait, in milliseconds. */
  readonly timeoutMs: number;
  /** Pause between attempts. @default 100 */
  readonly intervalMs?: number;
  /** What is being waited for, for the timeout message ("kube-apiserver /readyz to return 200"). */
  readonly what: string;
  /** How to fix it, appended to the timeout message. */
  readonly hint?: string;
  readonly signal?: AbortSignal;
  /** Checked before each attempt; a thrown error ends the wait at once (e.g. a component exited). */
  readonly guard?: () => Promise<void> | void;
}

/**
 * Polls `check` until it returns a value other than `undefined`. Errors thrown by `check` count as
 * "not yet" and the last one is kept for the timeout message. Integration code only: unit-testable
 * logic takes an injected clock instead. The product's poll is `pollUntil` of `@baton/core/clock`, where a thrown error
 * ends the wait (a handoff must not retry what failed); a bed's components refuse connections until they are up, so
 * here an error means "not yet", and a guard stops the wait when a component exits.
 * @throws TimeoutError naming what did not become ready.
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, options: PollOptions): Promise<T> {
  const deadline = performance.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    options.signal?.throwIfAborted();
    await options.guard?.();
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (performance.now() >= deadline) {
      const why = last instanceof Error ? `; last error: ${last.message}` : '';
      throw new TimeoutError(
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what}${why}${options.hint ? `; ${options.hint}` : ''}`,
        {
          details: { what: options.what, timeoutMs: options.timeoutMs },
        },
      );
    }
    await sleep(options.intervalMs ?? 100, undefined, options.signal ? { signal: options.signal } : undefined);
  }
}
