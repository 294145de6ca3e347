import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { loadHandoffPlan } from './handoff-plan.js';
import { planSecrets, readManifestDir, validateManifestSet } from './manifest-set.js';

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
      'pod.yaml#1 (line 10): ClusterRoleBinding "ci-admin" binds ClusterRole cluster-admin, which is not part of the install (cluster-admin is never granted by a push)',
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

describe('planSecrets', () => {
  it('turns the plan-declared secret files into push-only Secrets, never echoing their content in errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    writeFileSync(join(dir, 'pull.yaml'), 'username: reader\npassword: s3cr3t-value\n');
    writeFileSync(join(dir, 'bad.yaml'), 'password: [s3cr3t-value]\n');
    const withFiles = {
      ...plan,
      pull: { ...plan.pull, credential: { secretName: 'gitops-pull-credential', fromFile: join(dir, 'pull.yaml') } },
      push: { ...plan.push, secrets: [{ name: 'webhook', fromFile: join(dir, 'bad.yaml') }] },
    };
    expect(() => planSecrets(withFiles)).toThrow(
      `push.secrets[0].fromFile: ${join(dir, 'bad.yaml')} must be a YAML map of key: string value`,
    );
    expect(() => planSecrets(withFiles)).not.toThrow(/s3cr3t/);
    const [pull] = planSecrets({ ...withFiles, push: { ...plan.push, secrets: [] } });
    expect(pull?.object).toMatchObject({
      kind: 'Secret',
      metadata: { name: 'gitops-pull-credential' },
      stringData: { password: 's3cr3t-value' },
    });
    // A manifest set whose only pull credential comes from the plan still validates, and the Secret is push-only.
    const set = validateManifestSet(
      readManifestDir(plan.push.manifests).filter((m) => m.object.kind !== 'Secret'),
      { ...withFiles, push: { ...plan.push, secrets: [] } },
    );
    expect(set.pushOnly).toEqual(['Secret/gitops-system/gitops-pull-credential']);
    expect(JSON.stringify(set.digest)).not.toContain('s3cr3t');
  });
});
