import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapRefFor, type Confinement, type KubeClients } from '@baton/kube';
import { ApiException } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createSettlingFakeClock } from '../fake-clock.js';
import { loadHandoffPlan } from '../handoff-plan.js';
import { prove, revoke } from './ending.js';
import { fakeHandoffDeps } from './fake-deps.js';
import { HandoffRun } from './run.js';
import type { HandoffDeps } from './types.js';
import { outcomeOf } from './verdict.js';

// revoke and prove on the fake clock, against an operator whose API calls the test scripts: the paths a real API
// server reaches only by bad luck (a lost TokenRequest answer, a close that never returns) are played exactly.

const fixture = fileURLToPath(new URL('../../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const never = () => new Promise<never>(() => {});

const fail = (code: number) => () => Promise.reject(new ApiException(code, 'failed', '{}', {}));

/** An operator whose every call fails with `code` (or hangs), except those in `ok`; records what was called. */
function scriptedOperator(o: { code?: number; hang?: boolean; ok?: readonly string[] }) {
  const calls: string[] = [];
  const answer = (name: string) => () => {
    calls.push(name);
    if (o.ok?.includes(name)) return Promise.resolve({ metadata: { uid: 'u', resourceVersion: '1' } });
    return o.hang ? never() : fail(o.code ?? 500)();
  };
  const api = new Proxy({}, { get: (_t, name) => answer(String(name)) });
  const operator = {
    server: 'https://127.0.0.1:1',
    core: api,
    rbac: api,
    objects: api,
    authn: api,
  } as unknown as KubeClients;
  return { operator, calls };
}

function newRun(operator: KubeClients, extra: Partial<HandoffDeps> = {}) {
  const journalDir = mkdtempSync(join(tmpdir(), 'baton-ending-'));
  dirs.push(journalDir);
  const { plan } = loadHandoffPlan(fixture);
  const clock = createSettlingFakeClock();
  const run = new HandoffRun(
    { ...plan, journalDir },
    fakeHandoffDeps(operator, { revokeRetryMs: 5_000, ...extra }, clock),
  );
  const confinement = {
    name: 'baton-bootstrap-r1',
    subject: 'system:serviceaccount:baton-system:baton-bootstrap-r1',
    planDigest: 'sha256:00',
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'baton-bootstrap-r1' },
      spec: {},
    },
  };
  run.ref = bootstrapRefFor('r1', 'baton-system', { cluster: [], namespaced: { 'gitops-system': [] } });
  run.confinement = {
    plan: confinement as unknown as Confinement,
    expected: [],
    probeDenied: true,
    installedAt: clock.now(),
  };
  return { run, clock };
}

describe('revoke after a TokenRequest whose answer was lost', () => {
  it('keeps the confinement (deny-all) when the revoke fails: a live token baton never saw may exist', async () => {
    const { operator, calls } = scriptedOperator({ code: 500, ok: ['read', 'replace'] });
    const { run } = newRun(operator);
    // The mint got as far as the TokenRequest (run.ref is set) but no identity came back.
    expect(run.identity).toBeUndefined();
    const revoked = await revoke(run);
    const proof = await prove(run, revoked);
    // A token baton never saw may be live: the policy is switched to deny-all, not left plan-shaped.
    expect(calls.slice(0, 2)).toEqual(['read', 'replace']);
    expect(run.confinement!.closedAt).toBeDefined();
    expect(revoked.failure).toMatch(/^revocation failed/);
    expect(run.confinement!.removedAt).toBeUndefined();
    expect(run.confinement!.keptBecause).toMatch(/token request whose answer baton never saw/);
    expect(run.confinement!.keptBecause).toMatch(/the next run or baton revoke removes it/);
    // The policy and its binding were never asked to go.
    expect(calls.filter((c) => c === 'delete')).toEqual([]);
    expect(outcomeOf(run, { revoke: revoked, proof })).toBe('failed');
  });

  it('removes the confinement once the revoke went through (the bound Secret is gone, so is any token)', async () => {
    const { operator, calls } = scriptedOperator({
      code: 404,
      ok: ['readNamespacedSecret', 'deleteNamespacedSecret', 'deleteNamespacedServiceAccount', 'delete'],
    });
    const { run } = newRun(operator);
    const { revoked } = await revoke(run);
    expect(revoked?.deleted).toContain('Secret/baton-system/baton-bootstrap-r1');
    expect(run.confinement!.removedAt).toBeDefined();
    expect(calls).toContain('delete');
  });

  it('removes the confinement at once when no token was ever requested', async () => {
    const { operator } = scriptedOperator({ code: 500, ok: ['delete'] });
    const { run } = newRun(operator);
    run.ref = undefined;
    await revoke(run);
    expect(run.confinement!.removedAt).toBeDefined();
    expect(run.confinement!.keptBecause).toBeUndefined();
  });
});

describe('revoke when the API server stalls', () => {
  it('does not wait for a close that never returns: it revokes after one request deadline', async () => {
    const { operator } = scriptedOperator({
      code: 404,
      ok: ['readNamespacedSecret', 'deleteNamespacedSecret', 'deleteNamespacedServiceAccount', 'delete'],
    });
    const { run, clock } = newRun(operator, { requestTimeoutMs: 2_000 });
    run.closing = never();
    const t0 = clock.monotonicMs();
    const { revoked } = await revoke(run);
    expect(revoked).toBeDefined();
    expect(clock.monotonicMs() - t0).toBeGreaterThanOrEqual(2_000);
    expect(clock.monotonicMs() - t0).toBeLessThan(10_000);
  });

  it('gives up on a revoke whose every request hangs within revokeRetryMs, and says how to finish it', async () => {
    const { operator } = scriptedOperator({ hang: true });
    const { run, clock } = newRun(operator, { requestTimeoutMs: 1_000, revokeRetryMs: 6_000 });
    const t0 = clock.monotonicMs();
    const { revoked, failure } = await revoke(run);
    expect(revoked).toBeUndefined();
    expect(failure).toMatch(/revocation failed: .*got no answer within 3 s; run baton revoke once/);
    expect(clock.monotonicMs() - t0).toBeLessThan(20_000);
    expect(run.confinement!.keptBecause).toBeDefined();
  });
});
