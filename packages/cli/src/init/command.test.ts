import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadHandoffPlan, previewHandoff } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { initPlan } from './command.js';
import { shippedProfileDir } from './render-push-set.js';

const dirs: string[] = [];
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'baton-init-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const base = { ref: 'main', name: 'prod-eu-1', gitUrl: 'https://git.example.org/platform/fleet.git' } as const;

/** What `baton init … > plan.yaml` leaves: the plan saved in `dir`, plus the pull credential the user writes. */
async function initInto(dir: string, o: { profile: string; from?: string; path?: string }) {
  const r = await initPlan({ ...base, ...o, dir });
  writeFileSync(join(dir, 'plan.yaml'), r.text);
  writeFileSync(r.pullCredentialPath, stringify({ username: 'reader', password: 'never-logged' }), { mode: 0o600 });
  return { r, loaded: loadHandoffPlan(join(dir, 'plan.yaml')) };
}

describe('baton init', () => {
  it('writes a commented baton-controller plan that loads, takes its controller block from the profile, and previews', async () => {
    const dir = newDir();
    const { r, loaded } = await initInto(dir, { profile: 'baton-controller' });
    expect(r.text).toMatch(/^# A baton handoff plan/);
    // Nothing of this profile is push-only: Git carries every file of the push set.
    const yamlIn = (d: string) => readdirSync(join(dir, d)).filter((f) => f.endsWith('.yaml'));
    expect(yamlIn('git').sort()).toEqual(yamlIn('push').sort());
    for (const f of yamlIn('git'))
      expect(readFileSync(join(dir, 'git', f), 'utf8')).toBe(readFileSync(join(dir, 'push', f), 'utf8'));
    expect(r.text).not.toMatch(/^controller:/m);
    const { plan } = loaded;
    expect(plan.controller).toEqual({
      name: 'baton-controller',
      namespace: 'baton-system',
      serviceAccount: 'baton-controller',
      fieldManager: 'baton-controller',
      privilege: 'scoped',
      status: {
        apiVersion: 'baton.dev/v1alpha1',
        kind: 'GitSync',
        namespace: 'baton-system',
        name: 'baton-controller',
        revisionPath: 'status.lastAppliedRevision',
      },
    });
    expect(plan.pull.credential.secretName).toBe('baton-pull-credential');
    expect(plan.pull.source).toMatchObject({ url: base.gitUrl, ref: 'main', path: 'clusters/prod-eu-1' });
    // The push set names the same source as the plan (the controller pulls what the takeover waits for).
    const gitsync = readFileSync(join(dir, 'push', '50-gitsync.yaml'), 'utf8');
    expect(gitsync).toContain(`url: ${base.gitUrl}`);
    expect(gitsync).toContain('path: clusters/prod-eu-1');
    expect(gitsync).toContain('# Created by the push, never stored in Git'); // comments survive
    const preview = previewHandoff(loaded);
    expect(preview.objects).toContain('Deployment/baton-system/baton-controller');
    expect(preview.objects).toContain('Secret/baton-system/baton-pull-credential');
    expect(plan.audit.signer.kind).toBe('key-file');
    expect(readFileSync((plan.audit.signer as { path: string }).path, 'utf8').length).toBeGreaterThan(0);
    // The trusted-keys file vouches for the log this plan writes (a README run found keygen's default origin there,
    // and `baton audit verify` refused the log with origin-mismatch).
    const keys = parse(readFileSync(join(dir, 'audit', 'trusted-keys.yaml'), 'utf8')) as { origin: string };
    expect(keys.origin).toBe(plan.audit.origin);
    // The GitSync's webhookSecretRef names baton-webhook: the plan pushes it, with a random key (issue 28: before, no
    // plan created it and the controller stalled until the takeover timed out).
    expect(r.pushSecretPaths).toEqual([join(dir, 'baton-webhook.yaml')]);
    expect(plan.push.secrets).toEqual([{ name: 'baton-webhook', fromFile: join(dir, 'baton-webhook.yaml') }]);
    const key = (parse(readFileSync(r.pushSecretPaths[0]!, 'utf8')) as { secret: string }).secret;
    expect(key).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(r.pushSecretPaths[0]!).mode & 0o777).toBe(0o600);
    expect(r.text).not.toContain(key);
    expect(preview.objects).toContain('Secret/baton-system/baton-webhook');
    // Without it, plan and up refuse the set naming the GitSync, the field and the fix.
    writeFileSync(join(dir, 'plan.yaml'), r.text.replace(/^ {2}secrets:\n.*\n/m, ''));
    expect(() => previewHandoff(loadHandoffPlan(join(dir, 'plan.yaml')))).toThrow(
      /GitSync "baton-system\/baton-controller" needs Secret baton-webhook \(spec\.webhookSecretRef\.name\), which the push does not create, so the controller would stall on it; declare it in the plan/,
    );
  });

  it('renders Flux for the source and lets the plan override the profile’s controller block', async () => {
    const from = newDir();
    const flux = shippedProfileDir('flux')!;
    for (const f of [
      '00-namespace.yaml',
      '10-serviceaccounts.yaml',
      '20-rbac.yaml',
      '25-reconciler-rbac.yaml',
      '30-deployments.yaml',
      '35-service.yaml',
      '40-sync.yaml',
    ])
      writeFileSync(join(from, f), readFileSync(join(flux, f), 'utf8'));
    writeFileSync(
      join(from, '05-crds.yaml'),
      [
        crd('gitrepositories', 'GitRepository', 'source.toolkit.fluxcd.io'),
        crd('kustomizations', 'Kustomization', 'kustomize.toolkit.fluxcd.io'),
      ].join('---\n'),
    );
    const rules = join(from, 'rules');
    rmSync(rules, { recursive: true, force: true });
    await import('node:fs').then((fs) => fs.cpSync(join(flux, 'rules'), rules, { recursive: true }));
    const dir = newDir();
    const { r, loaded } = await initInto(dir, { profile: 'flux', from, path: 'clusters/eu' });
    const sync = readFileSync(join(dir, 'push', '40-sync.yaml'), 'utf8');
    expect(sync).toContain(`url: ${base.gitUrl}`);
    expect(sync).toContain('path: ./clusters/eu');
    expect(loaded.plan.controller).toMatchObject({
      name: 'kustomize-controller',
      namespace: 'flux-system',
      fieldManager: 'kustomize-controller',
      status: { kind: 'Kustomization', name: 'flux-system', revisionPath: 'status.lastAppliedRevision' },
    });
    expect(loaded.plan.pull.credential.secretName).toBe('flux-system');
    expect(previewHandoff(loaded).objects).toContain('GitRepository/flux-system/flux-system');
    // What Git carries: the same rendered files without the profile's push-only kinds (CRDs and RBAC, which the
    // scoped reconciler cannot apply); a file of push-only objects alone is not there at all.
    expect(readdirSync(join(dir, 'git')).sort()).toEqual([
      '00-namespace.yaml',
      '10-serviceaccounts.yaml',
      '30-deployments.yaml',
      '35-service.yaml',
      '40-sync.yaml',
    ]);
    expect(readFileSync(join(dir, 'git', '40-sync.yaml'), 'utf8')).toBe(sync);
    const kinds = readdirSync(join(dir, 'git')).flatMap((f) =>
      [...readFileSync(join(dir, 'git', f), 'utf8').matchAll(/^kind: (\w+)/gm)].map((m) => m[1]),
    );
    expect(kinds).not.toContain('CustomResourceDefinition');
    expect(kinds.filter((k) => /Role/.test(k ?? ''))).toEqual([]);
    // Any field of the block may be overridden; the rest stays the profile's.
    writeFileSync(
      join(dir, 'plan.yaml'),
      `${r.text}controller:\n  privilege: cluster-admin\n  status: { revisionPath: status.lastAttemptedRevision }\n`,
    );
    const over = loadHandoffPlan(join(dir, 'plan.yaml')).plan.controller;
    expect(over.privilege).toBe('cluster-admin');
    expect(over.status).toMatchObject({ kind: 'Kustomization', revisionPath: 'status.lastAttemptedRevision' });
  });

  it('renders Argo CD with the Secrets its workloads read: argocd-redis generated (random, 0600) and pushed by the plan', async () => {
    const from = newDir();
    const argocd = shippedProfileDir('argocd')!;
    await import('node:fs').then((fs) =>
      fs.cpSync(argocd, from, { recursive: true, filter: (p) => !p.includes('generated') && !p.includes('example') }),
    );
    writeFileSync(
      join(from, '05-crds.yaml'),
      [
        crd('applications', 'Application', 'argoproj.io', 'v1alpha1'),
        crd('appprojects', 'AppProject', 'argoproj.io', 'v1alpha1'),
      ].join('---\n'),
    );
    const dir = newDir();
    const { r, loaded } = await initInto(dir, { profile: 'argocd', from });
    expect(r.pushSecretPaths).toEqual([join(dir, 'argocd-redis.yaml')]);
    expect(loaded.plan.push.secrets).toEqual([{ name: 'argocd-redis', fromFile: join(dir, 'argocd-redis.yaml') }]);
    expect(r.text).toContain('argocd-redis: random values written by baton init');
    const auth = (parse(readFileSync(r.pushSecretPaths[0]!, 'utf8')) as { auth: string }).auth;
    expect(auth).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(r.pushSecretPaths[0]!).mode & 0o777).toBe(0o600);
    expect(r.text).not.toContain(auth);
    // The plan previews: the set's own check finds every Secret its pods read.
    expect(previewHandoff(loaded).objects).toContain('Secret/argocd/argocd-redis');
    // Without it, the same set is refused before anything is created.
    writeFileSync(join(dir, 'plan.yaml'), r.text.replace(/^ {2}secrets:\n.*\n/m, ''));
    expect(() => previewHandoff(loadHandoffPlan(join(dir, 'plan.yaml')))).toThrow(
      /StatefulSet "argocd\/argocd-application-controller" needs Secret argocd-redis/,
    );
    // Another cluster gets another password; an existing file is kept.
    const other = await initPlan({ ...base, profile: 'argocd', from, dir: newDir() });
    expect(readFileSync(other.pushSecretPaths[0]!, 'utf8')).not.toContain(auth);
    rmSync(join(dir, 'push'), { recursive: true });
    rmSync(join(dir, 'git'), { recursive: true });
    await initPlan({ ...base, profile: 'argocd', from, dir });
    expect((parse(readFileSync(r.pushSecretPaths[0]!, 'utf8')) as { auth: string }).auth).toBe(auth);
  });

  it('refuses a set without the CRDs the profile waits for, a URL with credentials, and a non-empty push folder', async () => {
    const from = newDir();
    const flux = shippedProfileDir('flux')!;
    await import('node:fs').then((fs) =>
      fs.cpSync(flux, from, { recursive: true, filter: (s) => !s.includes('generated') }),
    );
    await expect(initPlan({ ...base, profile: 'flux', from, dir: newDir() })).rejects.toThrow(
      /waits for CRDs gitrepositories\.source\.toolkit\.fluxcd\.io.*testenv build --flux/,
    );
    await expect(
      initPlan({ ...base, profile: 'baton-controller', gitUrl: 'https://u:tok@git.example.org/x.git', dir: newDir() }),
    ).rejects.toThrow(/carries credentials/);
    const dir = newDir();
    await initPlan({ ...base, profile: 'baton-controller', dir });
    await expect(initPlan({ ...base, profile: 'baton-controller', dir })).rejects.toThrow(ConfigError);
    await expect(initPlan({ ...base, profile: 'nope', dir: newDir() })).rejects.toThrow(/--profile nope.*--from/);
  });
});

function crd(plural: string, kind: string, group: string, version = 'v1'): string {
  return stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      scope: 'Namespaced',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
}
