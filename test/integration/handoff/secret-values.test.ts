import { type HandoffStep, type HandoffSummary, readReceipt, runHandoff } from '@baton/core';
import { probeToken } from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AttemptResult, attacker, bootstrapServiceAccount, stealToken } from '../../support/attacker.js';
import { JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, eventually, statusOfCall } from '../../support/kube.js';

// Issue 18, part 2, tried as an attacker against the real apiserver: with a token for the run's identity (the operator
// requests a second one for the run's ServiceAccount), during the push, read the pull Secret and rewrite its value
// the moment the push has stored it. The read must be refused (the identity holds no `get` on Secrets); the rewrite
// is either refused (the window already closed) or admitted, and then the post-close check, reading with the
// operator's credential, finds it: the run ends tampered naming the Secret, revoked and proven, the planned value
// pushed again (tamper-repair.test.ts freezes the run to make the rewrite certain and asserts the repair in full).
const NS = 'baton-system';
const PULL = 'baton-pull-credential';
const PASSWORD = 'attacker-password-5c2e91';
let cluster: Cluster;
let env: BatonControllerEnv;
let summary: HandoffSummary;
let stolen = '';
let output = '';
const attempts: Record<string, AttemptResult> = {};

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  env = await createBatonControllerEnv({ kubeconfigPath: cluster.kubeconfigPath, realNode: cluster.realNode });
  const admin = adminClients(cluster.kubeconfigPath);
  let attack: Promise<void> | undefined;
  const { deps, captured } = testHandoffDeps(env.loaded, cluster.kubeconfigPath, {
    onStep: async (step: HandoffStep) => {
      if (step !== 'push') return;
      const sa = await bootstrapServiceAccount(admin, NS);
      stolen = await stealToken(admin, NS, sa);
      // Not awaited: the push goes on while the thief waits for the pull Secret to be stored.
      attack = rewriteOnceStored(stolen);
    },
  });
  summary = await runHandoff(env.loaded, deps);
  await attack;
  output = `${captured.text()}\n${JSON.stringify(summary)}`;
}, 600_000);

afterAll(async () => {
  await env?.stop();
  await cluster?.stop();
});

async function rewriteOnceStored(token: string): Promise<void> {
  const admin = adminClients(cluster.kubeconfigPath);
  const { c, out, attempt, apply } = attacker(cluster.kubeconfigPath, token);
  await eventually(
    async () => (await statusOfCall(() => admin.core.readNamespacedSecret({ namespace: NS, name: PULL }))) === 200,
    60_000,
    'the pull Secret stored by the push',
    5,
  );
  // The planned labels, type and keys (the confinement pins them), with the thief's value under every key.
  const live = await admin.core.readNamespacedSecret({ namespace: NS, name: PULL });
  const value = Buffer.from(PASSWORD).toString('base64');
  await attempt('rewrite the pull Secret with the thief password', () =>
    apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: PULL, namespace: NS, ...(live.metadata?.labels ? { labels: live.metadata.labels } : {}) },
      type: live.type ?? 'Opaque',
      data: Object.fromEntries(Object.keys(live.data ?? {}).map((k) => [k, value])),
    }),
  );
  await attempt('read the pull Secret', () => c.core.readNamespacedSecret({ namespace: NS, name: PULL }));
  await attempt('list Secrets in the install namespace', () => c.core.listNamespacedSecret({ namespace: NS }));
  Object.assign(attempts, out);
}

describe('a leaked bootstrap token can neither read nor change a planned Secret unnoticed', () => {
  it('cannot read the pull Secret during the push: the identity holds no get on Secrets', () => {
    expect(attempts['read the pull Secret']?.status).toBe(403);
    // The recorded message is the apiserver's JSON body, quotes escaped.
    expect(attempts['read the pull Secret']?.message).toMatch(/cannot get resource \\?"secrets\\?"/);
    expect(attempts['list Secrets in the install namespace']?.status).toBe(403);
  });

  it('a rewritten value fails the run closed naming the Secret; a refused one leaves the planned value', async () => {
    const rewrite = attempts['rewrite the pull Secret with the thief password']!;
    expect([200, 403], rewrite.message).toContain(rewrite.status);
    const admin = adminClients(cluster.kubeconfigPath);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    const receipt = await readReceipt(operator, NS);
    if (rewrite.status === 200) {
      // Caught and repaired (issue 29): tampered, never handed-off; the planned value is back in the cluster.
      expect(summary.outcome).toBe('tampered');
      expect(summary.error).toContain('post-close check');
      expect(summary.error).toContain(`Secret/${NS}/${PULL} (data[`);
      expect(summary.tampering?.repair?.outcome).toBe('repaired');
      expect(receipt?.outcome).toBe('tampered');
      expect(summary.audit).toBeDefined();
      const held = await admin.core.readNamespacedSecret({ namespace: NS, name: PULL });
      expect(Object.values(held.data ?? {})).not.toContain(Buffer.from(PASSWORD).toString('base64'));
    } else {
      expect(summary.outcome, summary.error).toBe('handed-off');
      const held = await admin.core.readNamespacedSecret({ namespace: NS, name: PULL });
      expect(Object.values(held.data ?? {})).not.toContain(Buffer.from(PASSWORD).toString('base64'));
    }
    // Either way the credential is revoked and proven, and the identity is gone.
    expect(summary.proof?.probeStatus).toBe(401);
    expect(summary.proof?.tokenReviewAuthenticated).toBe(false);
    // The thief's token is not bound to the run's Secret: it dies with the ServiceAccount, once the apiserver's 10 s
    // token cache lets go of it.
    await expect.poll(() => probeToken(operator, stolen), { timeout: 30_000, interval: 500 }).toBe(401);
  });

  it('no Secret value, planned or the thief one, nor any token reaches the output', () => {
    for (const v of [PASSWORD, Buffer.from(PASSWORD).toString('base64'), ...env.secretValues]) {
      expect(output).not.toContain(v);
      expect(output).not.toContain(Buffer.from(v).toString('base64'));
    }
    expect(output).not.toContain(stolen);
    expect(output).not.toMatch(JWT_PATTERN);
  });
});
