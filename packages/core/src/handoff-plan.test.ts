import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { handoffPlanJsonSchema, loadHandoffPlan, parseHandoffPlan, planAsInput } from './handoff-plan.js';
import { planSecrets } from './manifest-secrets.js';

const fixture = fileURLToPath(new URL('../../../test/fixtures/handoff/plan.yaml', import.meta.url));
/** The fixture plan as written (a resolved plan is not an input: its audit block names a resolved signer). */
const written = () => parse(readFileSync(fixture, 'utf8')) as Record<string, Record<string, unknown>>;
const parseWritten = (input: unknown) => parseHandoffPlan(input, 'p.yaml', dirname(fixture));

describe('handoff plan', () => {
  it('loads the fixture plan, applies defaults and resolves paths against the plan file', () => {
    const { plan } = loadHandoffPlan(fixture);
    expect(plan.batonNamespace).toBe('baton-system');
    expect(plan.push.fieldManager).toBe('baton-bootstrap');
    expect(plan.controller.fieldManager).toBe('baton-controller');
    expect(plan.controller.status).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'gitops-controller-status',
      revisionPath: 'data.revision',
    });
    expect(plan.takeover.requireOwnership).toBe(true);
    expect(plan.push.manifests).toBe(
      fileURLToPath(new URL('../../../test/fixtures/handoff/controller', import.meta.url)),
    );
  });

  it('refuses an undeclared push credential, naming the file and the field', () => {
    const { plan } = loadHandoffPlan(fixture);
    const bad = { ...plan, push: { ...plan.push, credential: 'cluster-admin' } };
    expect(() => parseHandoffPlan(bad, 'plan.yaml')).toThrow(ConfigError);
    expect(() => parseHandoffPlan(bad, 'plan.yaml')).toThrow(/^plan\.yaml: invalid handoff plan: .*push\.credential/);
  });

  it('refuses unknown fields (typos fail)', () => {
    const { plan } = loadHandoffPlan(fixture);
    expect(() => parseHandoffPlan({ ...plan, timout: 3 }, 'p.yaml')).toThrow(/timout/);
  });

  it('takes the kubeconfig text inline (no path), refuses both at once, and never quotes the text', () => {
    const plan = written();
    const text = 'apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: not-a-real-secret-4f2a}}]\n';
    const inline = parseWritten({ ...plan, cluster: { name: 'c', kubeconfigContent: text } });
    expect(inline.plan.cluster.kubeconfigContent).toBe(text);
    expect(inline.plan.cluster.kubeconfig).toBeUndefined();
    const both = { ...plan, cluster: { name: 'c', kubeconfig: 'k.yaml', kubeconfigContent: text } };
    expect(() => parseHandoffPlan(both, 'p.yaml')).toThrow(/kubeconfig \(a path\) or kubeconfigContent/);
    expect(() => parseHandoffPlan(both, 'p.yaml')).not.toThrow(/not-a-real-secret/);
  });

  it('refuses a push field manager equal to the controller one (ownership would prove nothing)', () => {
    const plan = written();
    const same = { ...plan, push: { ...plan.push, fieldManager: 'baton-controller' } };
    expect(() => parseWritten(same)).toThrow(/controller\.fieldManager.*must differ/);
  });

  it('takes the audit key from a file or an external signer command, exactly one of them', () => {
    const plan = written();
    const { audit } = parseWritten(plan).plan;
    expect(audit.signer).toEqual({ kind: 'key-file', path: join(dirname(fixture), 'audit', 'signing.key') });
    const publicKey = 'ops.example/handoff+2b7e0d61+AUpJp7dE5kkGIL2nxVvqJqSOxIsyJYhDSVq2odLJk2wU';
    const withSigner = (command: string[]) => ({
      ...plan,
      audit: { logPath: 'audit/handoff.log', signer: { command, publicKey } },
    });
    expect(parseWritten(withSigner(['./bin/kms-sign', '--key', 'k1'])).plan.audit.signer).toEqual({
      kind: 'command',
      command: [join(dirname(fixture), 'bin', 'kms-sign'), '--key', 'k1'],
      verifierKey: publicKey,
      timeoutSeconds: 30,
    });
    // A bare program name is looked up on PATH, as a shell would.
    expect(parseWritten(withSigner(['gcloud-sign'])).plan.audit.signer).toMatchObject({ command: ['gcloud-sign'] });
    const both = { ...plan, audit: { ...plan.audit, signer: { command: ['x'], publicKey } } };
    const neither = { ...plan, audit: { logPath: 'audit/handoff.log' } };
    // A resolved plan goes back to input form (the fleet's shards parse their plan anew) and parses to the same plan.
    for (const p of [
      plan,
      withSigner(['./bin/kms-sign']),
      { ...plan, audit: { logPath: 'a.log', signer: { pkcs11: 'pkcs11:token=t;object=k?module-path=/m.so' } } },
    ]) {
      const resolved = parseWritten(p).plan;
      expect(parseWritten(planAsInput(resolved)).plan).toEqual(resolved);
    }
    for (const bad of [both, neither])
      expect(() => parseWritten(bad)).toThrow(
        /^p\.yaml: invalid handoff plan: .*exactly one of signingKeyPath .* and signer .* at "audit"/,
      );
  });

  it('caps the push window at the token lifetime (600 s)', () => {
    const { plan } = loadHandoffPlan(fixture);
    expect(() => parseHandoffPlan({ ...plan, push: { ...plan.push, budgetSeconds: 601 } }, 'p.yaml')).toThrow(
      /push\.budgetSeconds/,
    );
  });

  it('keeps schemas/handoff-plan.schema.json in step with the zod schema (run `pnpm --filter @baton/core schemas`)', () => {
    const onDisk = JSON.parse(
      readFileSync(new URL('../schemas/handoff-plan.schema.json', import.meta.url), 'utf8'),
    ) as unknown;
    expect(onDisk).toEqual(handoffPlanJsonSchema());
  });
});

describe('the controller block from the profile', () => {
  const profileDir = fileURLToPath(new URL('../../../bootstrap-manifests/flux', import.meta.url));
  const controllerManifests = fileURLToPath(new URL('../../../test/fixtures/handoff/controller', import.meta.url));
  const bare = {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    cluster: { name: 'c' },
    push: { credential: 'bootstrap-token', profile: 'flux', manifests: './push' },
    pull: { credential: { fromFile: './pull.yaml' }, source: { url: 'http://git.example/c.git' } },
    takeover: { profile: profileDir },
    audit: { logPath: './a.log', signingKeyPath: './a.key' },
  };

  it('fills an omitted block and pull Secret from the profile, and lets the plan override any field', () => {
    const { plan } = parseHandoffPlan(bare, 'p.yaml');
    expect(plan.controller).toEqual({
      name: 'kustomize-controller',
      namespace: 'flux-system',
      serviceAccount: 'kustomize-controller',
      fieldManager: 'kustomize-controller',
      privilege: 'scoped',
      status: {
        apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
        kind: 'Kustomization',
        namespace: 'flux-system',
        name: 'flux-system',
        revisionPath: 'status.lastAppliedRevision',
      },
    });
    expect(plan.pull.credential.secretName).toBe('flux-system');
    const over = parseHandoffPlan(
      {
        ...bare,
        controller: { name: 'other', status: { name: 'apps' } },
        pull: { ...bare.pull, credential: { secretName: 'git', fromFile: './pull.yaml' } },
      },
      'p.yaml',
    ).plan;
    expect(over.controller.name).toBe('other');
    expect(over.controller.serviceAccount).toBe('kustomize-controller');
    expect(over.controller.status).toMatchObject({ kind: 'Kustomization', name: 'apps' });
    expect(over.pull.credential.secretName).toBe('git');
  });

  it('names the missing field and where to set it when no profile gives the block', () => {
    const { takeover: _t, ...rest } = bare;
    // A folder of manifests without rules/profile.yaml.
    const noProfile = { ...rest, push: { ...rest.push, manifests: controllerManifests } };
    expect(() => parseHandoffPlan(noProfile, 'p.yaml')).toThrow(ConfigError);
    expect(() => parseHandoffPlan(noProfile, 'p.yaml')).toThrow(
      /^p\.yaml: invalid handoff plan: controller\.name is missing and no controller profile gives it .*set controller\.name in the plan/,
    );
    const block = { name: 'c', namespace: 'n', serviceAccount: 's', status: { name: 'st' } };
    expect(() => parseHandoffPlan({ ...noProfile, controller: block }, 'p.yaml')).toThrow(
      /pull\.credential\.secretName is missing/,
    );
  });
});

describe('a push.manifests folder that is not there', () => {
  const base = {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    cluster: { name: 'c' },
    push: { credential: 'bootstrap-token', profile: 'flux', manifests: './push' },
    pull: { credential: { fromFile: './pull.yaml' }, source: { url: 'http://git.example/c.git' } },
    audit: { logPath: './a.log', signingKeyPath: './a.key' },
  };

  it('is named as such, not as a missing controller field (issue 28)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-plan-'));
    try {
      expect(() => parseHandoffPlan(base, join(dir, 'plan.yaml'), dir)).toThrow(
        `push.manifests ${join(dir, 'push')} does not exist; point push.manifests (relative to the plan) at the folder of the manifests to push`,
      );
      mkdirSync(join(dir, 'push'));
      writeFileSync(join(dir, 'push', 'README.md'), 'not a manifest');
      expect(() => parseHandoffPlan(base, join(dir, 'plan.yaml'), dir)).toThrow(
        `push.manifests ${join(dir, 'push')} holds no manifest (*.yaml, *.yml or *.json)`,
      );
      expect(() => parseHandoffPlan(base, join(dir, 'plan.yaml'), dir)).not.toThrow(/controller\.name is missing/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Argo CD's profile", () => {
  it("gives the controller block, and the pull Secret the label and url Argo CD needs; the file's keys win", () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-plan-'));
    try {
      writeFileSync(join(dir, 'pull.yaml'), 'username: reader\npassword: pw\ntype: helm\n');
      const { plan } = parseHandoffPlan(
        {
          apiVersion: 'baton.dev/v1alpha1',
          kind: 'HandoffPlan',
          cluster: { name: 'c' },
          push: { credential: 'bootstrap-token', profile: 'argocd', manifests: './push' },
          pull: {
            credential: { fromFile: './pull.yaml' },
            source: { url: 'http://git.example/c.git', path: 'clusters/c' },
          },
          takeover: { profile: fileURLToPath(new URL('../../../bootstrap-manifests/argocd', import.meta.url)) },
          audit: { logPath: './a.log', signingKeyPath: './a.key' },
        },
        'p.yaml',
        dir,
      );
      expect(plan.controller).toMatchObject({
        name: 'argocd-application-controller',
        namespace: 'argocd',
        serviceAccount: 'argocd-application-controller',
        fieldManager: 'argocd-controller',
        status: { kind: 'Application', name: 'root', revisionPath: 'status.sync.revision' },
      });
      const [secret] = planSecrets(plan).map((x) => x.object);
      expect(secret?.metadata).toEqual({
        name: 'cluster-config-repo',
        labels: { 'argocd.argoproj.io/secret-type': 'repository' },
      });
      expect(secret?.stringData).toEqual({
        url: 'http://git.example/c.git',
        type: 'helm',
        username: 'reader',
        password: 'pw',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
