import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ClusterPlanCheck } from '@baton/core';
import { apiserverRequestsBy, type Cluster, identityActivity, startCluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CLI } from '../../support/handoff-run.js';
import { adminClients } from '../../support/kube.js';

// `baton init` then `baton plan` as a user runs them, against a real apiserver whose audit log must show that the
// plan wrote nothing and minted nothing.
const run = promisify(execFile);
const baton = (args: string[]) =>
  run(process.execPath, [CLI, ...args], {
    timeout: 180_000,
  });
const failing = (args: string[]) =>
  baton(args).then(
    () => {
      throw new Error(`baton ${args.join(' ')} succeeded`);
    },
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

let cluster: Cluster;
let dir: string;
const password = `pull-secret-${process.pid}`;

beforeAll(async () => {
  // kwok: plan reads the cluster and runs nothing on it; no Pod ever starts in this file.
  cluster = await startCluster({ node: 'kwok', nodes: 1 });
  dir = mkdtempSync(join(tmpdir(), 'baton-plan-'));
  const init = await baton([
    'init',
    '--profile',
    'baton-controller',
    '--git-url',
    'https://git.example.org/platform/fleet.git',
    '--name',
    'plan-test',
    '--dir',
    dir,
  ]);
  writeFileSync(join(dir, 'plan.yaml'), init.stdout);
  writeFileSync(join(dir, 'pull-credential.yaml'), stringify({ username: 'reader', password }), { mode: 0o600 });
});

afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('baton plan', () => {
  it('prints the push plan of an init-written plan without a cluster', async () => {
    const { stdout } = await baton(['plan', '--plan', join(dir, 'plan.yaml'), '-o', 'json']);
    const r = JSON.parse(stdout) as {
      profile: string;
      preview: { objects: string[]; planDigest: string };
      cluster?: unknown;
    };
    expect(r.profile).toBe('baton-controller');
    expect(r.preview.objects).toContain('Deployment/baton-system/baton-controller');
    expect(r.preview.planDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.cluster).toBeUndefined();
  });

  it('dry-runs every object as the operator, says what preflight and the API server would refuse, and writes nothing', async () => {
    const admin = adminClients(cluster.kubeconfigPath);
    await admin.core.createNamespace({ body: { metadata: { name: 'baton-system' } } });
    // A binding of the same name to another role: roleRef is immutable, so the push would fail on it.
    await admin.rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'baton-controller' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: 'someone', namespace: 'default' }],
      },
    });
    const who = await admin.authn.createSelfSubjectReview({ body: {} });
    const operator = who.status!.userInfo!.username!;
    const auditLog = cluster.auditLogPath!;
    const before = apiserverRequestsBy(auditLog, operator).length;
    const allBefore = readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length;

    const e = await failing([
      'plan',
      '--plan',
      join(dir, 'plan.yaml'),
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-o',
      'json',
    ]);
    expect(e.code).toBe(1);
    const c = (JSON.parse(e.stdout) as { cluster: ClusterPlanCheck }).cluster;
    expect(c.operator).toBe(operator);
    expect(c.version).toMatch(/^v1\.\d+\.\d+/);
    expect(c.refusals).toEqual([]);
    const result = Object.fromEntries(c.dryRun.map((d) => [d.object, d.result]));
    expect(result).toMatchObject({
      'Namespace/baton-system': 'ok',
      'CustomResourceDefinition/gitsyncs.baton.dev': 'ok',
      'Deployment/baton-system/baton-controller': 'ok',
      'Secret/baton-system/baton-pull-credential': 'ok',
      // init writes the webhook key the GitSync names, and the plan pushes it (issue 28).
      'Secret/baton-system/baton-webhook': 'ok',
      'ClusterRoleBinding/baton-controller': 'refused',
      // Its CRD is not served until the push applies it.
      'GitSync/baton-system/baton-controller': 'deferred',
    });
    expect(c.dryRun.find((d) => d.result === 'refused')?.message).toMatch(/roleRef|immutable|cannot change/i);
    expect(Object.keys(result)).toHaveLength(11);

    const events = apiserverRequestsBy(auditLog, operator).slice(before);
    const activity = identityActivity(events);
    expect(activity.allowedWrites).toBe(0);
    expect(activity.dryRuns).toBeGreaterThanOrEqual(8);
    expect(events.some((x) => x.objectRef?.subresource === 'token')).toBe(false);
    // Nobody else wrote for it either: no bootstrap identity, no policy, nothing stored.
    const after = readFileSync(auditLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(allBefore)
      .map((l) => JSON.parse(l) as { user?: { username?: string }; objectRef?: { resource?: string } });
    // (The dry runs name field manager baton-bootstrap in their URI; no request is made AS a bootstrap identity.)
    expect(after.filter((x) => x.user?.username?.includes('baton-bootstrap'))).toEqual([]);
    expect(after.filter((x) => x.objectRef?.resource === 'validatingadmissionpolicies')).toEqual([]);
    const sas = await admin.core.listNamespacedServiceAccount({ namespace: 'baton-system' });
    expect(sas.items.filter((s) => s.metadata?.name?.startsWith('baton-'))).toEqual([]);
    await expect(
      admin.core.readNamespacedSecret({ namespace: 'baton-system', name: 'baton-pull-credential' }),
    ).rejects.toThrow();
    expect(e.stdout + e.stderr).not.toContain(password);
  });
});
