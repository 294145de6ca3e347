import { systemClock } from '@baton/core/clock';
import { silentLogger } from '@baton/core/logger';
import { createFakeClock } from '@baton/core/testing';
import { ConfigError, KubeApiError } from '@baton/errors';
import type { KubeRestClient } from '@baton/kube/rest';
import { describe, expect, it } from 'vitest';
import { LeaderElector, type LeaderElectorOptions } from './leader-election.js';

// The election's timing on an injected clock, against an in-memory Lease with resourceVersions. What a real
// apiserver does with two replicas is in test/integration/controller/resilience.test.ts.

type Mode = 'ok' | 'fail' | 'hang';
interface StoredLease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: { holderIdentity?: string | null; renewTime?: string | null; leaseDurationSeconds?: number };
}

function leaseStore() {
  let lease: StoredLease | undefined;
  let version = 0;
  const state = { mode: 'ok' as Mode, writes: 0 };
  const gate = async (signal?: AbortSignal) => {
    if (state.mode === 'fail') throw new KubeApiError('apiserver unavailable', { details: { status: 503 } });
    if (state.mode === 'hang')
      await new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
  };
  const save = (body: StoredLease) => {
    lease = structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++version) } });
    state.writes++;
    return structuredClone(lease);
  };
  const kube = {
    async get(_path: string, signal?: AbortSignal) {
      await gate(signal);
      return lease && structuredClone(lease);
    },
    async call(method: string, _path: string, body: StoredLease, _type?: string, signal?: AbortSignal) {
      await gate(signal);
      const stale =
        method === 'POST' ? lease !== undefined : body.metadata.resourceVersion !== lease?.metadata.resourceVersion;
      if (stale) throw new KubeApiError('conflict', { details: { status: 409 } });
      return save(body);
    },
  };
  return {
    kube: kube as unknown as KubeRestClient,
    state,
    holder: () => lease?.spec.holderIdentity ?? undefined,
    takeOver: (identity: string) => {
      if (lease) save({ ...lease, spec: { ...lease.spec, holderIdentity: identity, renewTime: `t${version}` } });
    },
  };
}

/** A leader on a 1 s lease (renew deadline 300 ms) whose renewals from now on hang. */
async function hungLeader(options: Partial<LeaderElectorOptions> = {}) {
  const store = leaseStore();
  const r = elector(store.kube, { leaseDurationSeconds: 1, renewDeadlineMs: 300, retryMs: 50, ...options });
  await r.e.tryAcquireOrRenew();
  store.state.mode = 'hang';
  return r;
}

function elector(kube: KubeRestClient, options: Partial<LeaderElectorOptions> = {}) {
  const clock = createFakeClock();
  const e = new LeaderElector({
    kube,
    log: silentLogger(),
    clock,
    namespace: 'baton-system',
    name: 'baton-controller',
    identity: 'replica-a',
    ...options,
  });
  const changes: boolean[] = [];
  e.onChange((isLeader) => changes.push(isLeader));
  return { e, clock: (options.clock as typeof clock | undefined) ?? clock, changes };
}

describe('LeaderElector', () => {
  it('acquires a free Lease and keeps it by renewing', async () => {
    const store = leaseStore();
    const { e, clock, changes } = elector(store.kube);
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(store.holder()).toBe('replica-a');
    for (let i = 0; i < 10; i++) {
      clock.advance(2_000);
      expect(await e.tryAcquireOrRenew()).toBe(true);
    }
    expect(e.isLeader).toBe(true);
    expect(changes).toEqual([true]);
  });

  it('keeps leading through failed renewals until the renew deadline, counted from the last renewal sent', async () => {
    const store = leaseStore();
    const { e, clock, changes } = elector(store.kube);
    await e.tryAcquireOrRenew();
    store.state.mode = 'fail';
    for (const t of [2_000, 4_000, 6_000, 8_000]) {
      clock.advance(2_000);
      expect(await e.tryAcquireOrRenew(), `at ${t} ms`).toBe(true);
    }
    clock.advance(1_999);
    expect(e.isLeader).toBe(true);
    clock.advance(1);
    // 10 s after the last renewal was sent: no longer leader, even before the loop runs again.
    expect(e.isLeader).toBe(false);
    expect(await e.tryAcquireOrRenew()).toBe(false);
    expect(changes).toEqual([true, false]);
    // The Lease is still ours on the server: once it answers again, this replica leads again.
    store.state.mode = 'ok';
    expect(await e.tryAcquireOrRenew()).toBe(true);
  });

  it('a replica stalled past its deadline is not the leader when it resumes, and checkLeading steps down before a write', async () => {
    const store = leaseStore();
    const { e, clock, changes } = elector(store.kube);
    await e.tryAcquireOrRenew();
    // SIGSTOP for 30 s: no timer ran, another replica took the Lease.
    clock.advance(30_000);
    store.takeOver('replica-b');
    expect(e.isLeader).toBe(false);
    expect(changes).toEqual([true]);
    expect(e.checkLeading()).toBe(false);
    expect(changes).toEqual([true, false]);
    const writes = store.state.writes;
    expect(await e.tryAcquireOrRenew()).toBe(false);
    expect(store.state.writes).toBe(writes);
    expect(e.observedHolder).toBe('replica-b');
  });

  it('steps down at once when it sees another holder or loses a write race', async () => {
    const store = leaseStore();
    const { e, changes } = elector(store.kube);
    await e.tryAcquireOrRenew();
    store.takeOver('replica-b');
    expect(await e.tryAcquireOrRenew()).toBe(false);
    expect(e.isLeader).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it('aborts a renewal that hangs at the renew deadline and stops leading then', async () => {
    const { e, changes } = await hungLeader({ clock: systemClock });
    const t0 = performance.now();
    expect(await e.tryAcquireOrRenew()).toBe(false);
    const tookMs = performance.now() - t0;
    expect(tookMs).toBeLessThan(5_000);
    expect(e.isLeader).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it('stops leading when its renew deadline aborts a hung renewal, even before the clock reads the deadline', async () => {
    // The injected clock stands still while the real budget timer runs out: as when Node's timer, started from the
    // event loop's cached time, fires a little before the clock reaches the deadline.
    const { e, changes } = await hungLeader();
    expect(await e.tryAcquireOrRenew()).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it('a renewal aborted by the caller (shutdown) is not a missed deadline', async () => {
    const { e, changes } = await hungLeader();
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('stopping')), 20);
    expect(await e.tryAcquireOrRenew(stop.signal)).toBe(true);
    expect(changes).toEqual([true]);
  });

  it('refuses a renew deadline that is not shorter than the lease, or a retry period not shorter than the deadline', () => {
    const store = leaseStore();
    expect(() => elector(store.kube, { leaseDurationSeconds: 10, renewDeadlineMs: 10_000 })).toThrow(ConfigError);
    expect(() => elector(store.kube, { renewDeadlineMs: 2_000, retryMs: 2_000 })).toThrow(
      /need retry \(2000 ms\) < renew deadline \(2000 ms\) < lease duration \(15 s\)/,
    );
    // A short lease gets a proportionally short default deadline (the test harness runs 6 s leases).
    expect(() => elector(store.kube, { leaseDurationSeconds: 6, retryMs: 500 })).not.toThrow();
  });
});
