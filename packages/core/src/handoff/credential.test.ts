import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfinementError, KubeApiError } from '@baton/errors';
import { type KubeClients, planConfinement, type RbacRule } from '@baton/kube';
import { ApiException } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createSettlingFakeClock } from '../fake-clock.js';
import { loadHandoffPlan } from '../handoff-plan.js';
import type { ManifestSet } from '../manifest-set.js';
import { scopeCheck } from './credential.js';
import { fakeHandoffDeps } from './fake-deps.js';
import type { Minted } from './phases.js';
import { type ConfinementState, HandoffRun } from './run.js';

// The scope check on the fake clock: before the credential writes anything, its effective rules must be exactly the
// computed ones and the confinement must deny it a write outside the plan; either failing stops the run before the
// push (it fails closed).

const fixture = fileURLToPath(new URL('../../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const RULES: RbacRule[] = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['patch'], resourceNames: ['pull'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
];

function setup(o: { effective: readonly RbacRule[]; isProbeDenied: boolean }) {
  const journalDir = mkdtempSync(join(tmpdir(), 'baton-credential-'));
  dirs.push(journalDir);
  const { plan } = loadHandoffPlan(fixture);
  const confinement = planConfinement({
    name: 'baton-bootstrap-r1',
    runId: 'r1',
    username: 'system:serviceaccount:baton-system:baton-bootstrap-r1',
    planDigest: `sha256:${'1'.repeat(64)}`,
    fieldManager: 'baton-bootstrap',
    objects: [],
  });
  const denial = `serviceaccounts is forbidden: ValidatingAdmissionPolicy '${confinement.name}' denied request: outside the plan ${confinement.planDigest}`;
  let probes = 0;
  const bootstrap = {
    authz: {
      // The Role is bound in the install's namespace only; elsewhere the token holds nothing.
      createSelfSubjectRulesReview: async (a: { body: { spec: { namespace: string } } }) => ({
        status: {
          resourceRules: a.body.spec.namespace === 'gitops-system' ? o.effective.map((r) => ({ ...r })) : [],
          incomplete: false,
        },
      }),
    },
    objects: {
      create: () => {
        probes++;
        return o.isProbeDenied
          ? Promise.reject(new ApiException(403, 'Forbidden', JSON.stringify({ message: denial }), {}))
          : Promise.resolve({});
      },
    },
  } as unknown as KubeClients;
  const clock = createSettlingFakeClock();
  const run = new HandoffRun({ ...plan, journalDir }, fakeHandoffDeps({}, { confinementTimeoutMs: 3_000 }, clock));
  const rules = {
    cluster: [],
    namespaced: { 'gitops-system': RULES.map((r) => ({ ...r, namespace: 'gitops-system' })) },
  };
  const state: ConfinementState = { plan: confinement, expected: [], probeDenied: false, installedAt: clock.now() };
  const set = { objects: [], digest: confinement.planDigest } as unknown as ManifestSet;
  // Only what the scope check reads: the token's clients, the rules, the confinement and what is pushed.
  const minted = { set, toPush: set, rules, confinement: state, bootstrap } as unknown as Minted;
  return { run, minted, state, clock, probes: () => probes };
}

describe('scopeCheck', () => {
  it('passes when the rules are exactly the computed ones and the confinement denies the probe', async () => {
    const { run, minted, state } = setup({ effective: RULES, isProbeDenied: true });
    await scopeCheck(run, minted);
    expect(state.probeDenied).toBe(true);
  });

  it('fails closed when the token holds a rule the plan did not compute (get on Secrets), naming it', async () => {
    const { run, minted, probes } = setup({
      effective: [...RULES, { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['pull'] }],
      isProbeDenied: true,
    });
    const err = await scopeCheck(run, minted).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as Error).message).toMatch(/holds rules the plan did not compute .*extra \[.*secrets\|get\|pull/);
    expect(probes()).toBe(0);
  });

  it('fails closed when the confinement does not deny the probe within the timeout (on the fake clock)', async () => {
    const { run, minted, state, clock, probes } = setup({ effective: RULES, isProbeDenied: false });
    const t0 = clock.monotonicMs();
    const err = await scopeCheck(run, minted).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfinementError);
    expect((err as Error).message).toMatch(
      /did not deny a probe write outside the plan within 3 s \(last answer HTTP 200\); nothing was pushed/,
    );
    expect(clock.monotonicMs() - t0).toBeGreaterThanOrEqual(3_000);
    expect(probes()).toBeGreaterThan(10);
    expect(state.probeDenied).toBe(false);
  });
});
