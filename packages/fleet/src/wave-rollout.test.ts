import { createFakeClock } from '@baton/core/testing';
import { describe, expect, it } from 'vitest';
import type { ClusterResult, ClusterStatus, FleetProgressEvent } from './fleet-result.js';
import { FailureBudget, notStarted, runWaves } from './wave-rollout.js';
import type { Wave } from './waves.js';

type T = { readonly name: string };
const wave = (index: number, names: string[]): Wave<T> => ({
  index,
  name: `w${index}`,
  clusters: names.map((name) => ({ name })),
});
const result = (name: string, status: ClusterStatus, w = 0): ClusterResult => ({
  name,
  wave: w,
  status,
  attempts: status === 'not-started' ? 0 : 1,
  durationMs: 0,
});

/** An engine whose clusters end as `statuses` says (handed off when not named), recording the waves it ran. */
function engine(statuses: Record<string, ClusterStatus> = {}) {
  const ran: string[] = [];
  const runWave = async (w: Wave<T>) => {
    ran.push(w.name);
    return w.clusters.map((t) => result(t.name, statuses[t.name] ?? 'handed-off', w.index));
  };
  return { ran, runWave };
}

describe('FailureBudget', () => {
  it('counts failed and aborted clusters once each, and halts once, past the budget', () => {
    const events: FleetProgressEvent[] = [];
    const b = new FailureBudget(1, (e) => events.push(e));
    b.count(result('a', 'handed-off'));
    b.count(result('b', 'already-handed-off'));
    b.count(result('c', 'failed'));
    b.count(result('c', 'failed'));
    b.announceHalt();
    expect([b.failed, b.left, b.isExceeded, b.haltSignal.aborted]).toEqual([1, 0, false, false]);
    expect(events).toEqual([]);
    b.count(result('d', 'aborted'));
    b.announceHalt();
    b.announceHalt();
    expect([b.failed, b.left, b.isExceeded, b.haltSignal.aborted]).toEqual([2, -1, true, true]);
    expect(events).toEqual([
      {
        type: 'halted',
        budget: { allowed: 1, failed: 2 },
        reason: '2 cluster(s) failed, more than the failure budget of 1',
      },
    ]);
  });
});

describe('runWaves', () => {
  it('runs every wave in order and succeeds when every cluster is handed off', async () => {
    const e = engine({ b: 'already-handed-off' });
    const events: FleetProgressEvent[] = [];
    const r = await runWaves({
      waves: [wave(0, ['a']), wave(1, ['b', 'c'])],
      budget: 0,
      clock: createFakeClock(),
      onEvent: (x) => events.push(x),
      runWave: e.runWave,
    });
    expect(e.ran).toEqual(['w0', 'w1']);
    expect(r).toMatchObject({ outcome: 'succeeded', budget: { allowed: 0, failed: 0 }, notStarted: [] });
    expect(r.waves.map((w) => w.clusters.map((c) => c.status))).toEqual([
      ['handed-off'],
      ['already-handed-off', 'handed-off'],
    ]);
    expect(events.map((x) => `${x.type}${'wave' in x ? x.wave : ''}`)).toEqual([
      'wave-started0',
      'wave-finished0',
      'wave-started1',
      'wave-finished1',
    ]);
  });

  it('ends partial when failures stay within the budget', async () => {
    const r = await runWaves({
      waves: [wave(0, ['a', 'b']), wave(1, ['c'])],
      budget: 1,
      clock: createFakeClock(),
      runWave: engine({ b: 'failed' }).runWave,
    });
    expect(r).toMatchObject({ outcome: 'partial', budget: { allowed: 1, failed: 1 }, notStarted: [] });
  });

  it('halts after the wave that exceeds the budget: later waves never start, their clusters are not-started', async () => {
    const e = engine({ a: 'failed' });
    const events: FleetProgressEvent[] = [];
    const r = await runWaves({
      waves: [wave(0, ['a']), wave(1, ['b', 'c']), wave(2, ['d'])],
      budget: 0,
      clock: createFakeClock(),
      onEvent: (x) => events.push(x),
      runWave: e.runWave,
    });
    expect(e.ran).toEqual(['w0']);
    expect(r.outcome).toBe('halted');
    expect(r.notStarted).toEqual(['b', 'c', 'd']);
    expect(r.waves[1]?.clusters).toEqual([
      notStarted({ name: 'b' }, { index: 1 }),
      notStarted({ name: 'c' }, { index: 1 }),
    ]);
    expect(events.map((x) => x.type)).toEqual(['wave-started', 'wave-finished', 'halted']);
  });

  it('counts an engine’s not-started clusters as not started, and a result the engine already counted only once', async () => {
    const r = await runWaves({
      waves: [wave(0, ['a', 'b', 'c'])],
      budget: 1,
      clock: createFakeClock(),
      runWave: async (w, budget) => {
        const rs = [result('a', 'failed'), result('b', 'not-started'), result('c', 'not-started')];
        budget.count(rs[0]!);
        return rs.slice(0, w.clusters.length);
      },
    });
    expect(r).toMatchObject({ outcome: 'partial', budget: { failed: 1 }, notStarted: ['b', 'c'] });
  });

  it('starts no wave once aborted, and ends aborted', async () => {
    const ctl = new AbortController();
    const e = engine();
    const r = await runWaves({
      waves: [wave(0, ['a']), wave(1, ['b'])],
      budget: 5,
      clock: createFakeClock(),
      signal: ctl.signal,
      runWave: async (w) => {
        const rs = await e.runWave(w);
        ctl.abort();
        return rs;
      },
    });
    expect(e.ran).toEqual(['w0']);
    expect(r).toMatchObject({ outcome: 'aborted', notStarted: ['b'] });
  });
});
