import { createFakeClock } from '@baton/core/testing';
import { describe, expect, it } from 'vitest';
import { type FleetProgressEvent, fleetExitCode } from './fleet-result.js';
import { type AttemptResult, runFleet } from './orchestrator.js';
import type { Wave } from './waves.js';

type T = { readonly name: string };
const wave = (index: number, names: string[]): Wave<T> => ({
  index,
  name: index === 0 ? 'canary' : `wave-${index + 1}`,
  clusters: names.map((name) => ({ name })),
});

/** A simulated handoff on the fake clock: takes `ms`, fails for names in `failing` (each attempt, or the first n). */
function simulated(clock: ReturnType<typeof createFakeClock>, failing: Record<string, number> = {}, ms = 10_000) {
  let running = 0;
  let peak = 0;
  const starts: string[] = [];
  const attempts = new Map<string, number>();
  const handoff = async (t: T): Promise<AttemptResult> => {
    running++;
    peak = Math.max(peak, running);
    starts.push(t.name);
    const n = (attempts.get(t.name) ?? 0) + 1;
    attempts.set(t.name, n);
    try {
      await clock.sleep(ms);
      return n <= (failing[t.name] ?? 0)
        ? { outcome: 'failed', failedStep: 'takeover', error: 'controller takeover did not happen within 60 s' }
        : { outcome: 'handed-off' };
    } finally {
      running--;
    }
  };
  return { handoff, peak: () => peak, starts, attempts };
}

describe('runFleet', () => {
  it('runs waves strictly in order, at most `concurrency` at once, and hands everything off (exit 0)', async () => {
    const clock = createFakeClock();
    const sim = simulated(clock);
    const events: FleetProgressEvent[] = [];
    const r = await runFleet({
      waves: [wave(0, ['a']), wave(1, ['b', 'c', 'd', 'e', 'f', 'g', 'h'])],
      concurrency: 4,
      budget: 0,
      retries: 0,
      clock,
      handoff: sim.handoff,
      onEvent: (e) => events.push(e),
    });
    expect(r.outcome).toBe('succeeded');
    expect(fleetExitCode(r.outcome)).toBe(0);
    expect(sim.peak()).toBe(4);
    // Wave 2 starts only after the canary finished.
    const canaryDone = events.findIndex((e) => e.type === 'wave-finished' && e.wave === 0);
    const wave2Start = events.findIndex((e) => e.type === 'cluster-started' && e.wave === 1);
    expect(canaryDone).toBeGreaterThan(-1);
    expect(wave2Start).toBeGreaterThan(canaryDone);
    expect(r.waves.map((w) => w.clusters.map((c) => c.status))).toEqual([['handed-off'], Array(7).fill('handed-off')]);
  });

  it('counts a failure within the budget and finishes every wave (exit 3)', async () => {
    const clock = createFakeClock();
    const sim = simulated(clock, { c: 99 });
    const r = await runFleet({
      waves: [wave(0, ['a']), wave(1, ['b', 'c', 'd'])],
      concurrency: 2,
      budget: 1,
      retries: 0,
      clock,
      handoff: sim.handoff,
    });
    expect(r.outcome).toBe('partial');
    expect(fleetExitCode(r.outcome)).toBe(3);
    expect(r.budget).toEqual({ allowed: 1, failed: 1 });
    expect(r.waves[1]!.clusters.find((c) => c.name === 'c')).toMatchObject({
      status: 'failed',
      failedStep: 'takeover',
      attempts: 1,
    });
    expect(r.notStarted).toEqual([]);
  });

  it('halts when the canary exceeds a budget of 0: the next wave never starts (exit 1)', async () => {
    const clock = createFakeClock();
    const sim = simulated(clock, { a: 99 });
    const events: FleetProgressEvent[] = [];
    const r = await runFleet({
      waves: [wave(0, ['a']), wave(1, ['b', 'c'])],
      concurrency: 4,
      budget: 0,
      retries: 0,
      clock,
      handoff: sim.handoff,
      onEvent: (e) => events.push(e),
    });
    expect(r.outcome).toBe('halted');
    expect(fleetExitCode(r.outcome)).toBe(1);
    expect(sim.starts).toEqual(['a']);
    expect(r.notStarted).toEqual(['b', 'c']);
    expect(events.some((e) => e.type === 'wave-started' && e.wave === 1)).toBe(false);
    expect(events.find((e) => e.type === 'halted')).toMatchObject({ budget: { allowed: 0, failed: 1 } });
  });

  it('when the budget is spent mid-wave, starts nothing new but lets running handoffs finish', async () => {
    const clock = createFakeClock();
    // b fails fast; c and d are already running and must finish; e..h never start.
    let running = 0;
    const finished: string[] = [];
    const r = await runFleet({
      waves: [wave(0, ['a']), wave(1, ['b', 'c', 'd', 'e', 'f', 'g', 'h'])],
      concurrency: 3,
      budget: 0,
      retries: 0,
      clock,
      handoff: async (t) => {
        running++;
        await clock.sleep(t.name === 'b' ? 1 : 5_000);
        running--;
        finished.push(t.name);
        return t.name === 'b' ? { outcome: 'failed', error: 'push failed' } : { outcome: 'handed-off' };
      },
    });
    expect(running).toBe(0);
    expect(r.outcome).toBe('halted');
    expect(finished.sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(r.waves[1]!.clusters.map((c) => [c.name, c.status])).toEqual([
      ['b', 'failed'],
      ['c', 'handed-off'],
      ['d', 'handed-off'],
      ['e', 'not-started'],
      ['f', 'not-started'],
      ['g', 'not-started'],
      ['h', 'not-started'],
    ]);
    expect(r.notStarted).toEqual(['e', 'f', 'g', 'h']);
  });

  it('retries a failed cluster after a pause on the clock, and only a cluster failing every attempt counts', async () => {
    const clock = createFakeClock();
    const sim = simulated(clock, { b: 1, c: 99 });
    const events: FleetProgressEvent[] = [];
    const t0 = clock.monotonicMs();
    const r = await runFleet({
      waves: [wave(0, ['a', 'b', 'c'])],
      concurrency: 1,
      budget: 1,
      retries: 2,
      retryDelayMs: 1_000,
      clock,
      handoff: sim.handoff,
      onEvent: (e) => events.push(e),
    });
    expect(sim.attempts.get('b')).toBe(2);
    expect(sim.attempts.get('c')).toBe(3);
    expect(r.waves[0]!.clusters.map((c) => [c.name, c.status, c.attempts])).toEqual([
      ['a', 'handed-off', 1],
      ['b', 'handed-off', 2],
      ['c', 'failed', 3],
    ]);
    expect(r.budget.failed).toBe(1);
    expect(r.outcome).toBe('partial');
    // 6 attempts of 10 s, pauses of 1 s (b), then 1 s and 2 s (c).
    expect(clock.monotonicMs() - t0).toBe(6 * 10_000 + 1_000 + 1_000 + 2_000);
    expect(events.filter((e) => e.type === 'cluster-retrying').map((e) => (e as { delayMs: number }).delayMs)).toEqual([
      1_000, 1_000, 2_000,
    ]);
  });

  it('counts a handoff that throws as a failed attempt, with its message', async () => {
    const clock = createFakeClock();
    const r = await runFleet({
      waves: [wave(0, ['a'])],
      concurrency: 1,
      budget: 1,
      retries: 0,
      clock,
      handoff: async () => {
        throw new Error('cluster "a" is locked by run 42 on host h');
      },
    });
    expect(r.waves[0]!.clusters[0]).toMatchObject({
      status: 'failed',
      error: 'cluster "a" is locked by run 42 on host h',
    });
  });

  it('on abort starts nothing new and passes the signal to running handoffs (exit 1)', async () => {
    const clock = createFakeClock();
    const ac = new AbortController();
    const seen: boolean[] = [];
    const r = await runFleet({
      waves: [wave(0, ['a', 'b', 'c']), wave(1, ['d'])],
      concurrency: 1,
      budget: 5,
      retries: 0,
      clock,
      signal: ac.signal,
      handoff: async (t, ctx) => {
        if (t.name === 'b') ac.abort(new Error('SIGTERM'));
        seen.push(ctx.signal.aborted);
        return ctx.signal.aborted ? { outcome: 'aborted', failedStep: 'push' } : { outcome: 'handed-off' };
      },
    });
    expect(r.outcome).toBe('aborted');
    expect(fleetExitCode(r.outcome)).toBe(1);
    expect(seen).toEqual([false, true]);
    expect(r.notStarted).toEqual(['c', 'd']);
  });
});
