import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { loadHandoffPlan, parseHandoffPlan } from './handoff-plan.js';
import { loadManifestSet, readManifestDir, validateManifestSet } from './manifest-set.js';
import { loadProfile } from './profile.js';

const tempDir = useTempDirs();

const fixtures = fileURLToPath(new URL('../../../test/fixtures/handoff/', import.meta.url));
const { plan } = loadHandoffPlan(`${fixtures}plan.yaml`);

describe('validateManifestSet', () => {
  it('accepts the controller install and orders it for apply', () => {
    const set = validateManifestSet(readManifestDir(plan.push.manifests), plan);
    expect(set.objects.map((m) => `${m.object.kind}/${m.object.metadata.name}`)).toEqual([
      'Namespace/gitops-system',
      'ServiceAccount/gitops-controller',
      'ClusterRole/gitops-controller',
      'Role/gitops-controller',
      'ClusterRoleBinding/gitops-controller',
      'RoleBinding/gitops-controller',
      'Secret/gitops-pull-credential',
      'ConfigMap/gitops-source',
      'Deployment/gitops-controller',
    ]);
    expect(set.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(set.controllerImage.image).toBe('ghcr.io/baton-dev/baton-controller');
    expect(set.objects.find((m) => m.object.kind === 'Deployment')?.line).toBe(1);
  });

  it('digests the set canonically (RFC 8785): the same objects with their keys in another order give the same digest', () => {
    const objects = readManifestDir(plan.push.manifests);
    const reversed = objects.map((m) => ({ ...m, object: reverseKeys(m.object) as typeof m.object }));
    expect(JSON.stringify(reversed[0]!.object)).not.toBe(JSON.stringify(objects[0]!.object));
    const digest = validateManifestSet(objects, plan).digest;
    expect(validateManifestSet(reversed, plan).digest).toBe(digest);
    // A changed value still changes it.
    const changed = objects.map((m) =>
      m.object.kind === 'ConfigMap' ? { ...m, object: { ...m.object, data: { other: 'x' } } } : m,
    );
    expect(validateManifestSet(changed, plan).digest).not.toBe(digest);
  });

  it('refuses a Pod, a cluster-admin binding for a foreign subject and a workload in another namespace, naming file, object and rule', () => {
    const good = readManifestDir(plan.push.manifests);
    const bad = readManifestDir(`${fixtures}refused`);
    let err: unknown;
    try {
      validateManifestSet([...good, ...bad], plan);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toContain(
      'pod.yaml#0 (line 1): Pod "default/sneaky" is refused: kind Pod is not part of a controller install',
    );
    expect(message).toContain(
      'pod.yaml#1 (line 10): ClusterRoleBinding "ci-admin" binds ClusterRole cluster-admin, which the plan does not choose; remove the binding (the default), or set controller.privilege: cluster-admin',
    );
    expect(message).toContain(
      "to ServiceAccount default/ci, which is not the controller's; remove it or bind the controller's own ServiceAccount",
    );
    expect(message).toContain('Deployment "default/miner" is refused: it is in namespace default');
  });

  it('refuses a Secret other than the declared pull credential and an unpinned controller image', () => {
    const objs = readManifestDir(plan.push.manifests).map((m) =>
      m.object.kind === 'Deployment'
        ? {
            ...m,
            object: {
              ...m.object,
              spec: { template: { spec: { containers: [{ name: 'c', image: 'ghcr.io/x/controller:latest' }] } } },
            },
          }
        : m,
    );
    const extra = {
      object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'push-token' } },
      file: 'x.yaml',
      doc: 0,
      line: 1,
    };
    expect(() => validateManifestSet([...objs, extra], plan)).toThrow(
      /Secret "gitops-system\/push-token" is refused: the only Secret/,
    );
    expect(() => validateManifestSet(objs, plan)).toThrow(/not pinned by digest/);
  });
});

describe('validateManifestSet: the pull side’s privilege, Services and the profile', () => {
  const at = (object: Record<string, unknown>, file = 'extra.yaml') => ({
    object: object as never,
    file,
    doc: 0,
    line: 1,
  });
  const adminBinding = (subject: string) =>
    at({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `admin-${subject}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: subject, namespace: 'gitops-system' }],
    });

  it('binds cluster-admin only when the plan chooses it, and then only to the controller’s own ServiceAccounts', () => {
    const good = readManifestDir(plan.push.manifests);
    expect(() => validateManifestSet([...good, adminBinding('gitops-controller')], plan)).toThrow(
      /binds ClusterRole cluster-admin, which the plan does not choose/,
    );
    const chosen = { ...plan, controller: { ...plan.controller, privilege: 'cluster-admin' as const } };
    const set = validateManifestSet([...good, adminBinding('gitops-controller')], chosen);
    expect(set.objects.some((m) => m.object.metadata.name === 'admin-gitops-controller')).toBe(true);
    expect(() => validateManifestSet([...good, adminBinding('intruder')], chosen)).toThrow(
      /to ServiceAccount gitops-system\/intruder, which is not the controller's/,
    );
  });

  it('accepts a ClusterIP Service, refuses one that exposes the cluster or carries external IPs', () => {
    const good = readManifestDir(plan.push.manifests);
    const svc = (spec: Record<string, unknown>) =>
      at({ apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${Object.keys(spec).join('-')}` }, spec });
    const set = validateManifestSet([...good, svc({ ports: [{ port: 80 }] })], plan);
    expect(set.objects.map((m) => m.object.kind).indexOf('Service')).toBe(
      set.objects.map((m) => m.object.kind).indexOf('Deployment') - 1,
    );
    expect(() => validateManifestSet([...good, svc({ type: 'NodePort' })], plan)).toThrow(
      /type NodePort exposes the cluster outside/,
    );
    expect(() => validateManifestSet([...good, svc({ externalIPs: ['10.0.0.1'] })], plan)).toThrow(
      /externalIPs can capture traffic/,
    );
  });

  it('takes push-only objects from the profile, and refuses a profile that does not describe the plan’s controller', () => {
    const dir = tempDir('profile-');
    const file = join(dir, 'profile.yaml');
    const write = (over: Record<string, string>) =>
      writeFileSync(
        file,
        [
          `name: ${over.name ?? plan.push.profile}`,
          `namespace: ${over.namespace ?? plan.controller.namespace}`,
          `fieldManagers: [${over.fieldManager ?? plan.controller.fieldManager}]`,
          'revision: { object: { apiVersion: v1, kind: ConfigMap, name: status }, path: data.revision }',
          'pushOnly:',
          '  - { kind: ClusterRole, reason: its own RBAC }',
          '  - { kind: Role, name: gitops-controller, reason: its own RBAC }',
        ].join('\n'),
      );
    write({});
    const set = validateManifestSet(readManifestDir(plan.push.manifests), plan, undefined, loadProfile(file));
    expect(set.pushOnly).toEqual(['ClusterRole/gitops-controller', 'Role/gitops-system/gitops-controller']);
    expect(set.profile?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    write({ name: 'flux', namespace: 'flux-system', fieldManager: 'kustomize-controller' });
    let message = '';
    try {
      validateManifestSet(readManifestDir(plan.push.manifests), plan, undefined, loadProfile(file));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`${file} is profile flux, but the plan's push.profile is ${plan.push.profile}`);
    expect(message).toContain(`runs the controller in namespace flux-system`);
    expect(message).toContain(`set controller.fieldManager: kustomize-controller`);
    writeFileSync(
      file,
      'name: x\nnamespace: n\nrevision: { object: { apiVersion: v1, kind: K, name: a }, path: p }\nsource: []\n',
    );
    expect(() => loadProfile(file)).toThrow(/profile\.yaml: invalid profile: .*source/);
  });
});

describe('validateManifestSet: a StatefulSet controller (Argo CD)', () => {
  const asStatefulSet = (image: string) =>
    readManifestDir(plan.push.manifests).map((m) =>
      m.object.kind === 'Deployment'
        ? {
            ...m,
            object: {
              ...m.object,
              kind: 'StatefulSet',
              spec: { serviceName: 'x', template: { spec: { containers: [{ name: 'c', image }] } } },
            },
          }
        : m,
    );
  const profileFile = (extra: string) => {
    const file = join(tempDir('profile-'), 'profile.yaml');
    writeFileSync(
      file,
      [
        `name: ${plan.push.profile}`,
        `namespace: ${plan.controller.namespace}`,
        'revision: { object: { apiVersion: v1, kind: ConfigMap, name: status }, path: data.revision }',
        extra,
      ].join('\n'),
    );
    return loadProfile(file);
  };

  it('takes the controller from its StatefulSet, applied after the Deployments', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const set = validateManifestSet(asStatefulSet(`quay.io/x/controller:v1.2.3@${digest}`), plan);
    expect(set.controllerImage).toEqual({ image: 'quay.io/x/controller:v1.2.3', digest });
    expect(set.objects.at(-1)?.object.kind).toBe('StatefulSet');
  });

  it('accepts an exact release tag only where the profile says upstream publishes no digest', () => {
    const objs = asStatefulSet('quay.io/x/controller:v3.6.1');
    expect(() => validateManifestSet(objs, plan, undefined, profileFile(''))).toThrow(/not pinned by digest/);
    const pinnedByTag = profileFile('imagePinnedByTag: upstream pins by tag only');
    expect(validateManifestSet(objs, plan, undefined, pinnedByTag).controllerImage).toEqual({
      image: 'quay.io/x/controller:v3.6.1',
      digest: '',
    });
    expect(() =>
      validateManifestSet(asStatefulSet('quay.io/x/controller:latest'), plan, undefined, pinnedByTag),
    ).toThrow(/an exact release tag <image>:vX\.Y\.Z/);
  });
});

describe('validateManifestSet: the Secrets pushed workloads read', () => {
  const profile = fileURLToPath(new URL('../../../bootstrap-manifests/argocd', import.meta.url));
  // The profile's files as committed; the CRDs, generated by the Argo CD build (not in a clean checkout), as stubs.
  const argocd = tempDir('baton-argocd-');
  for (const f of readdirSync(profile).filter((x) => x.endsWith('.yaml') && !x.endsWith('.generated.yaml')))
    cpSync(join(profile, f), join(argocd, f));
  cpSync(join(profile, 'rules'), join(argocd, 'rules'), { recursive: true });
  writeFileSync(
    join(argocd, '05-crds.yaml'),
    [
      ['applications', 'Application'],
      ['appprojects', 'AppProject'],
    ]
      .map(([plural, kind]) =>
        JSON.stringify({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name: `${plural}.argoproj.io` },
          spec: {
            group: 'argoproj.io',
            scope: 'Namespaced',
            names: { kind, plural },
            versions: [{ name: 'v1alpha1', served: true, storage: true }],
          },
        }),
      )
      .join('\n---\n'),
  );
  /** bootstrap-manifests/argocd as a plan pushes it, with `secrets` (name: file text) as push.secrets. */
  const argoCdSet = (secrets: Record<string, string>) => {
    const dir = tempDir('baton-secrets-');
    writeFileSync(join(dir, 'pull.yaml'), 'username: reader\npassword: pw\n');
    for (const [name, text] of Object.entries(secrets)) writeFileSync(join(dir, `${name}.yaml`), text);
    const { plan: p } = parseHandoffPlan(
      {
        apiVersion: 'baton.dev/v1alpha1',
        kind: 'HandoffPlan',
        cluster: { name: 'c' },
        push: {
          credential: 'bootstrap-token',
          profile: 'argocd',
          manifests: argocd,
          secrets: Object.keys(secrets).map((name) => ({ name, fromFile: `./${name}.yaml` })),
        },
        pull: { credential: { fromFile: './pull.yaml' }, source: { url: 'http://git.example/c.git', path: 'c' } },
        audit: { logPath: './a.log', signingKeyPath: './a.key' },
      },
      'p.yaml',
      dir,
    );
    return () => loadManifestSet(p);
  };

  it("refuses Argo CD's install without argocd-redis, naming each workload, the reference and the fix", () => {
    expect(argoCdSet({ 'argocd-redis': 'auth: pw\n' })().objects.length).toBeGreaterThan(20);
    const missing = argoCdSet({});
    expect(missing).toThrow(ConfigError);
    const message = (() => {
      try {
        missing();
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    for (const [workload, container] of [
      ['Deployment "argocd/argocd-redis"', 'redis'],
      ['Deployment "argocd/argocd-repo-server"', 'argocd-repo-server'],
      ['StatefulSet "argocd/argocd-application-controller"', 'argocd-application-controller'],
    ])
      expect(message).toContain(
        `${workload} needs Secret argocd-redis (env REDIS_PASSWORD of container ${container}), which the push does not create, so its pod would never start; declare it in the plan (push.secrets`,
      );
    expect(argoCdSet({ 'argocd-redis': 'password: pw\n' })).toThrow(
      /needs key auth of Secret argocd-redis \(env REDIS_PASSWORD of container redis\), which the push creates without it \(keys: password\); add auth to the Secret's file/,
    );
  });

  it('checks envFrom and secret volumes too, and lets an optional reference through', () => {
    const withPod = (spec: object) =>
      readManifestDir(plan.push.manifests).map((m) =>
        m.object.kind === 'Deployment'
          ? { ...m, object: { ...m.object, spec: { ...(m.object.spec as object), template: { spec } } } }
          : m,
      );
    const image = `ghcr.io/baton-dev/baton-controller@sha256:${'a'.repeat(64)}`;
    expect(() =>
      validateManifestSet(
        withPod({
          containers: [{ name: 'c', image, envFrom: [{ secretRef: { name: 'env-secret' } }] }],
          volumes: [
            { name: 'certs', secret: { secretName: 'tls' } },
            { name: 'bundle', projected: { sources: [{ secret: { name: 'ca' } }] } },
          ],
        }),
        plan,
      ),
    ).toThrow(
      /needs Secret env-secret \(envFrom of container c\)[\s\S]*needs Secret tls \(volume certs\)[\s\S]*needs Secret ca \(projected volume bundle\)/,
    );
    const optional = withPod({
      containers: [
        {
          name: 'c',
          image,
          env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'absent', key: 'k', optional: true } } }],
          envFrom: [{ secretRef: { name: 'absent', optional: true } }],
        },
      ],
      volumes: [{ name: 'v', secret: { secretName: 'absent', optional: true } }],
    });
    expect(() => validateManifestSet(optional, plan)).not.toThrow();
    // The pull credential the set carries is a Secret the push creates.
    const pull = withPod({
      containers: [
        {
          name: 'c',
          image,
          env: [{ name: 'U', valueFrom: { secretKeyRef: { name: 'gitops-pull-credential', key: 'nope' } } }],
        },
      ],
    });
    expect(() => validateManifestSet(pull, plan)).toThrow(/needs key nope of Secret gitops-pull-credential/);
  });
});

function reverseKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reverseKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .reverse()
      .map(([k, x]) => [k, reverseKeys(x)]),
  );
}
