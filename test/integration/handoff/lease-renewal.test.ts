import { type HandoffStep, runHandoff } from '@baton/core';
import { findBootstrapLeftovers } from '@baton/kube';
import { describe, expect, it } from 'vitest';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { testHandoffDeps } from '../../support/handoff-run.js';
import { eventually, statusOf } from '../../support/kube.js';

// The handoff Lease is renewed while a run lasts, so no step can outlive it; a run that loses it stops pushing.

const LEASE = { namespace: 'baton-system', name: 'baton-handoff' };

describe('the handoff Lease', () => {
  const h = useHandoffCluster();

  it('a run whose Lease another run took stops before the push, and still revokes, proves and records', async () => {
    const { env, cluster } = h;
    const { deps, captured } = testHandoffDeps(env.loaded, cluster.kubeconfigPath, {
      lockRenewIntervalMs: 200,
      onStep: async (step: HandoffStep) => {
        if (step !== 'push') return;
        // Another host takes the Lease (as after an expiry); the next renewal must notice and abort the run.
        const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
        // The run renews every 200 ms: a replace that lost that race (409) is tried again on the new version.
        await eventually(
          async () => {
            const lease = await operator.coordination.readNamespacedLease(LEASE);
            const holderIdentity = JSON.stringify({ runId: 'other', user: 'someone', host: 'elsewhere', pid: 1 });
            return operator.coordination
              .replaceNamespacedLease({ ...LEASE, body: { ...lease, spec: { ...lease.spec, holderIdentity } } })
              .then(
                () => true,
                (err: unknown) => {
                  if (statusOf(err) === 409) return false;
                  throw err;
                },
              );
          },
          60_000,
          'the Lease taken by another run',
          50,
        );
        await eventually(async () => captured.text().includes('lost the handoff lock'), 60_000, 'lock loss noticed');
      },
    });
    const s = await runHandoff(env.loaded, deps);
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('push');
    expect(s.error).toContain('lost the handoff lock');
    expect(s.proof?.tokenReviewAuthenticated).toBe(false);
    expect(await findBootstrapLeftovers(deps.operator, 'baton-system')).toEqual([]);
    const { name, namespace } = env.loaded.plan.controller;
    const pushed = await deps.operator.apps.readNamespacedDeployment({ name, namespace }).then(
      () => true,
      () => false,
    );
    expect(pushed).toBe(false);
    // The Lease is the other run's: this run must not release it.
    const lease = await deps.operator.coordination.readNamespacedLease(LEASE);
    expect(lease.spec?.holderIdentity).toContain('"runId":"other"');
    await deps.operator.coordination.deleteNamespacedLease(LEASE);
  });

  it('is renewed during a run and released at its end', async () => {
    const { env, cluster } = h;
    let renewedDuringProof = false;
    const { deps } = testHandoffDeps(env.loaded, cluster.kubeconfigPath, {
      lockRenewIntervalMs: 500,
      onStep: async (step: HandoffStep) => {
        if (step !== 'prove') return;
        const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
        await eventually(
          async () => {
            const spec = (await operator.coordination.readNamespacedLease(LEASE)).spec;
            return new Date(spec?.renewTime ?? 0).getTime() > new Date(spec?.acquireTime ?? 0).getTime();
          },
          60_000,
          'the Lease renewed',
          250,
        );
        renewedDuringProof = true;
      },
    });
    const s = await runHandoff(env.loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(renewedDuringProof).toBe(true);
    const gone = await deps.operator.coordination.readNamespacedLease(LEASE).then(
      () => false,
      () => true,
    );
    expect(gone).toBe(true);
  });
});
