import { TimeoutError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { pollUntil } from './clock.js';
import { createFakeClock } from './fake-clock.js';

describe('pollUntil', () => {
  it('returns the first defined value and the elapsed time on the injected clock', async () => {
    const clock = createFakeClock();
    let n = 0;
    const r = await pollUntil(async () => (++n === 4 ? 'ready' : undefined), {
      clock,
      intervalMs: 500,
      timeoutMs: 10_000,
      what: 'x',
    });
    expect(r).toEqual({ value: 'ready', elapsedMs: 1500 });
  });

  it('times out with a message naming what was awaited and the last state', async () => {
    const clock = createFakeClock();
    const p = pollUntil(
      async () => undefined,
      { clock, intervalMs: 1000, timeoutMs: 5000, what: 'controller takeover' },
      () => 'Deployment not available',
    );
    await expect(p).rejects.toThrow(TimeoutError);
    await expect(p).rejects.toThrow('controller takeover did not happen within 5 s: Deployment not available');
  });

  it('stops when the signal aborts', async () => {
    const clock = createFakeClock();
    const ac = new AbortController();
    let n = 0;
    const p = pollUntil(
      async () => {
        if (++n === 3) ac.abort(new Error('SIGTERM'));
        return undefined;
      },
      { clock, timeoutMs: 60_000, what: 'x', signal: ac.signal },
    );
    await expect(p).rejects.toThrow('SIGTERM');
  });
});
