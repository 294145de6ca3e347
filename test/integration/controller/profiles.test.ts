import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkTakeover, loadProfile, type Profile } from '@baton/controller';
import { simulateReconciledStatus } from '@baton/controller/testing';
import { type ControllerEnv, pushAsBootstrap, startControllerEnv } from '@baton/testbed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';

// The Flux and Argo CD profiles against manifest sets shaped like the upstream installs, with a
// helper that writes the status their real controllers write once they have reconciled a commit.
const ROOT = new URL('../../../', import.meta.url).pathname;
const FIXTURES = join(ROOT, 'test/fixtures/gitops-profiles');
const REVISION = 'a3f1c2d4e5b60718293a4b5c6d7e8f9012a3b4c5';
let env: ControllerEnv;

beforeAll(async () => {
  env = await startControllerEnv();
});

afterAll(async () => {
  await env?.stop();
});

async function install(...files: string[]) {
  const set: Record<string, string> = {};
  for (const f of files) set[f] = await readFile(join(FIXTURES, f), 'utf8');
  await pushAsBootstrap(env.admin, set);
}

async function expectTakeoverFlow(profile: Profile, installFile: string, syncFile: string) {
  // Before anything is installed: every rule is a gap, and the check does not throw.
  const before = await checkTakeover(profile, env.admin, REVISION);
  expect(before.isTakenOver).toBe(false);
  expect(before.gaps.map((g) => g.rule)).toEqual(expect.arrayContaining(['deployment', 'crd', 'revision']));

  await install(installFile, syncFile);
  await eventually(
    async () =>
      (await checkTakeover(profile, env.admin, REVISION)).gaps.every(
        (g) => g.rule === 'revision' || g.rule === 'condition',
      ),
    60_000,
    `${profile.name} workloads ready`,
    500,
  );
  const noStatus = await checkTakeover(profile, env.admin, REVISION);
  expect(noStatus.isTakenOver).toBe(false);
  expect(noStatus.gaps[0]?.message).toContain(profile.revision.path);

  // An older commit, then an unhealthy sync of the right commit, then the real thing.
  await simulateReconciledStatus(profile, env.admin, 'b'.repeat(40));
  const old = await checkTakeover(profile, env.admin, REVISION);
  expect(old.isTakenOver).toBe(false);
  expect(old.gaps.some((g) => g.rule === 'revision' && g.message.includes(REVISION))).toBe(true);
  await simulateReconciledStatus(profile, env.admin, REVISION, { isHealthy: false });
  const unhealthy = await checkTakeover(profile, env.admin, REVISION);
  // One condition gap per rule object (Flux: the Kustomization and the GitRepository), nothing else.
  expect(unhealthy.gaps.map((g) => g.rule)).toEqual([profile.revision, ...profile.sources].map(() => 'condition'));
  await simulateReconciledStatus(profile, env.admin, REVISION);
  const done = await checkTakeover(profile, env.admin, REVISION);
  expect(done).toMatchObject({ isTakenOver: true, gaps: [] });
  return done;
}

describe('GitOps controller profiles', () => {
  it('flux: both controllers Available, CRDs Established, Kustomization and GitRepository Ready at main@sha1:<commit>', async () => {
    const profile = await loadProfile(join(ROOT, 'bootstrap-manifests/flux'));
    expect(profile.revision.format).toBe('{ref}@sha1:{commit}');
    expect(profile.sources.map((s) => s.object.kind)).toEqual(['GitRepository']);
    const done = await expectTakeoverFlow(profile, 'flux-install.yaml', 'flux-sync.yaml');
    expect(done.observedRevision).toBe(`main@sha1:${REVISION}`);
  });

  it('argocd: workloads ready (application controller is a StatefulSet), Application root Synced + Healthy at the commit', async () => {
    const profile = await loadProfile(join(ROOT, 'bootstrap-manifests/argocd'));
    expect(profile.statefulSets).toEqual(['argocd-application-controller']);
    const done = await expectTakeoverFlow(profile, 'argocd-install.yaml', 'argocd-root-app.yaml');
    expect(done.observedRevision).toBe(REVISION);
  });

  it('rejects a profile with a typo, naming the file and field', async () => {
    const { parseProfile } = await import('@baton/controller');
    expect(() =>
      parseProfile(
        {
          name: 'x',
          namespace: 'n',
          revision: { object: { apiVersion: 'v1', kind: 'K', name: 'a' }, path: 'status.x' },
          deploymens: [],
        },
        'flux/rules/profile.yaml',
      ),
    ).toThrow(/flux\/rules\/profile\.yaml: invalid profile.*deploymens/s);
  });
});
