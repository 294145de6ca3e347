import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as pulumi from '@pulumi/pulumi';
import { beforeAll, describe, expect, it } from 'vitest';
import { batonController } from './controllers.js';
import { Handoff, PROVIDER_MODULE } from './handoff.js';
import type { HandoffReceipt } from './handoff-receipt.js';
import { handoffFromConfig } from './stack-config.js';

const manifests = fileURLToPath(new URL('../../../bootstrap-manifests/baton-controller', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, { default?: string }>;
};
const SECRET_SIG = '1b47061264138c4ac30d75fd1eb44270';

/** What the mocked engine was asked to register. */
const registered: pulumi.runtime.MockResourceArgs[] = [];

const receipt: HandoffReceipt = {
  outcome: 'handed-off',
  runId: 'run-1',
  revision: 'b'.repeat(40),
  credential: null,
  proof: null,
  confinement: null,
  audit: { logPath: '/x/audit.log', index: 0, eventId: 'run-1', eventDigest: 'sha256:00', checkpoint: 'cp' },
  receiptName: 'baton-system/baton-receipt',
  readinessSeconds: null,
  overheadSeconds: null,
  takeover: null,
  stepDurationsMs: {},
  totalSeconds: 1,
};

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push(args);
        return { id: `${args.name}-id`, state: { ...args.inputs, receipt } };
      },
      call: () => ({}),
    },
    'project',
    'stack',
    // Not a preview: the preview's log line would reach the console, which tests forbid.
    false,
  );
});

/** Resolves an output in the mocked runtime (unit tests only). */
function resolved<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply(resolve));
}

/** The config every stack needs, over which a test sets what it is about. */
const BASE_CONFIG = {
  'project:gitUrl': 'http://git.example/c.git',
  'project:gitRevision': 'c'.repeat(40),
  'project:manifests': manifests,
  'project:pullUsername': 'reader',
  'project:pullPassword': 'pw',
};

function isSecretValue(v: unknown): boolean {
  return (
    typeof v === 'object' && v !== null && (v as Record<string, unknown>)[pulumi.runtime.specialSigKey] === SECRET_SIG
  );
}

describe('the provider module the dynamic-provider host loads', () => {
  it('hands the host the provider that @baton/pulumi/provider exports, loaded by package name', () => {
    // As require-from-string evaluates it: CommonJS with the module's own require.
    const exports: { handler?: () => unknown } = {};
    const asked: string[] = [];
    const provider = { check: () => undefined };
    const fakeRequire = (id: string) => {
      asked.push(id);
      return { handoffProvider: provider };
    };
    new Function('exports', 'require', PROVIDER_MODULE)(exports, fakeRequire);
    expect(exports.handler?.()).toBe(provider);
    expect(asked).toEqual(['@baton/pulumi/provider']);
    expect(pkg.exports['./provider']?.default).toBe('./dist/provider.js');
  });
});

describe('Handoff (wiring, mocked engine)', () => {
  it('registers baton:index:Handoff with a dynamic child that gets the inputs, secrets marked', async () => {
    const h = new Handoff('prod-eu-1', {
      kubeconfig: 'kubeconfig-text-secret',
      controller: batonController({ source: { url: 'http://git.example/c.git', path: 'clusters/x' }, manifests }),
      pullCredential: { username: 'reader', password: pulumi.output('pw-secret') },
      // The GitSync names its webhook Secret: a plan without it is refused (issue 28).
      pushSecrets: { 'baton-webhook': { secret: pulumi.output('whsec-secret') } },
      audit: { logPath: 'audit/handoffs.jsonl', signingKeyPath: 'audit/baton.key' },
    });
    expect(await resolved(h.runId)).toBe('run-1');
    expect(await resolved(h.outcome)).toBe('handed-off');
    expect(await resolved(h.receiptName)).toBe('baton-system/baton-receipt');
    expect(await resolved(h.audit)).toEqual(receipt.audit);
    expect(registered.map((r) => r.type)).toEqual(['baton:index:Handoff', 'pulumi-nodejs:dynamic/baton:HandoffRun']);
    const run = registered[1]!;
    expect(run.name).toBe('prod-eu-1');
    expect(isSecretValue(run.inputs.kubeconfig)).toBe(true);
    expect(isSecretValue(run.inputs.pullCredential)).toBe(true);
    expect(isSecretValue(run.inputs.pushSecrets)).toBe(true);
    expect(run.inputs.clusterName).toBe('prod-eu-1');
    // Relative paths are made absolute against the program's directory, where `pulumi up` runs it.
    expect(run.inputs.audit.logPath).toBe(`${process.cwd()}/audit/handoffs.jsonl`);
    expect(run.inputs.journalDir).toBe(`${process.cwd()}/.baton/journal`);
    expect(run.inputs.controller.manifests).toBe(manifests);
    // The provider module loads the real one by package name: no module of baton is in the state.
    expect(run.inputs.__provider).toBe(PROVIDER_MODULE);
  });

  it('computes the push plan without a cluster or a secret', async () => {
    const h = new Handoff('plan-only', {
      kubeconfig: pulumi.output('never-read'),
      controller: batonController({ source: { url: 'http://git.example/c.git' }, manifests }),
      pullCredential: { username: 'reader', password: 'pw' },
      pushSecrets: { 'baton-webhook': { secret: 'whsec' } },
      audit: { logPath: 'a.log', signingKeyPath: 'a.key' },
    });
    const plan = await resolved(h.plan);
    expect(plan.planDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(plan.objects).toContain('Deployment/baton-system/baton-controller');
    expect(plan.pushOnly).toEqual(['Secret/baton-system/baton-pull-credential', 'Secret/baton-system/baton-webhook']);
    expect(plan.rules.length).toBeGreaterThan(0);
    expect(plan.rules.some((r) => r.verbs.includes('*') || r.resources.includes('*'))).toBe(false);
    expect(plan.confinement.allowed.length).toBe(plan.objects.length);
  });

  it('builds a stack from `pulumi config`: secrets stay secrets, relative paths resolve against the program', async () => {
    pulumi.runtime.setAllConfig(
      {
        'project:gitUrl': 'http://git.example/c.git',
        'project:gitRevision': 'c'.repeat(40),
        'project:manifests': manifests,
        'project:pullUsername': 'reader',
        'project:pullPassword': 'pw-from-config',
        'project:webhookSecret': 'whsec-from-config',
        'project:takeoverTimeoutSeconds': '45',
        'project:images': JSON.stringify({
          trustedKeys: 'keys/image-keys.yaml',
          keyless: { trustedRoot: '/etc/sigstore/root.json', identities: [{ issuer: 'https://i', subject: 's' }] },
          credentials: 'docker/config.json',
          mirrors: { 'ghcr.io': 'http://127.0.0.1:5000' },
          rules: [
            { images: ['docker.io/library/redis'], unsigned: 'not signed upstream' },
            { images: ['quay.io/argoproj/*'], trustedKeys: 'keys/argo.yaml' },
          ],
        }),
      },
      ['project:pullPassword', 'project:webhookSecret'],
    );
    const out = handoffFromConfig(pulumi.secret('kubeconfig-from-config'));
    expect((await resolved(out.receipt)).runId).toBe('run-1');
    // Named by the stack (`clusterName` unset).
    const run = registered.find((r) => r.type === 'pulumi-nodejs:dynamic/baton:HandoffRun' && r.name === 'stack')!;
    expect(run.inputs.controller.source).toEqual({
      url: 'http://git.example/c.git',
      ref: 'main',
      path: '.',
      revision: 'c'.repeat(40),
    });
    expect(run.inputs.takeover).toEqual({ timeoutSeconds: 45 });
    expect(run.inputs.audit.signingKeyPath).toBe(`${process.cwd()}/audit/baton.key`);
    expect(run.inputs.push).toEqual({
      images: {
        trustedKeys: `${process.cwd()}/keys/image-keys.yaml`,
        keyless: { trustedRoot: '/etc/sigstore/root.json', identities: [{ issuer: 'https://i', subject: 's' }] },
        credentials: `${process.cwd()}/docker/config.json`,
        mirrors: { 'ghcr.io': 'http://127.0.0.1:5000' },
        rules: [
          { images: ['docker.io/library/redis'], unsigned: 'not signed upstream' },
          { images: ['quay.io/argoproj/*'], trustedKeys: `${process.cwd()}/keys/argo.yaml` },
        ],
      },
    });
    for (const key of ['kubeconfig', 'pullCredential', 'pushSecrets'])
      expect(isSecretValue(run.inputs[key]), key).toBe(true);
  });

  it('takes the audit key from a signer command in config (signerCommand, signerPublicKey), refusing a mix', async () => {
    const publicKey = 'baton.dev/handoff+2b7e0d61+AUpJp7dE5kkGIL2nxVvqJqSOxIsyJYhDSVq2odLJk2wU';
    pulumi.runtime.setAllConfig(
      {
        ...BASE_CONFIG,
        'project:clusterName': 'kms-signed',
        'project:webhookSecret': 'whsec',
        'project:signerCommand': JSON.stringify(['kms-sign', '--key', 'k1']),
        'project:signerPublicKey': publicKey,
      },
      ['project:pullPassword', 'project:webhookSecret'],
    );
    await resolved(handoffFromConfig(pulumi.secret('kc')).receipt);
    const run = registered.find((r) => r.type === 'pulumi-nodejs:dynamic/baton:HandoffRun' && r.name === 'kms-signed')!;
    expect(run.inputs.audit).toEqual({
      logPath: `${process.cwd()}/audit/handoffs.jsonl`,
      signer: { command: ['kms-sign', '--key', 'k1'], publicKey },
    });
    const refused = (extra: Record<string, string>) => {
      pulumi.runtime.setAllConfig({ ...BASE_CONFIG, ...extra }, ['project:pullPassword']);
      expect(() => handoffFromConfig(pulumi.secret('kc'))).toThrow(pulumi.RunError);
      try {
        handoffFromConfig(pulumi.secret('kc'));
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(
      refused({
        'project:signerCommand': '["s"]',
        'project:signingKey': 'k.key',
        'project:signerPublicKey': publicKey,
      }),
    ).toMatch(
      /^stack config signerCommand: give one of signingKey \(a key file\), signerCommand with signerPublicKey, or signerPkcs11/,
    );
    expect(refused({ 'project:signerCommand': '"s"', 'project:signerPublicKey': publicKey })).toMatch(
      /^stack config signerCommand: must be a list of the program and its arguments/,
    );
    expect(refused({ 'project:signerCommand': '["s"]' })).toMatch(
      /^stack config signerPublicKey: required with signerCommand/,
    );
  });

  it('takes push-only Secrets from config pushSecrets (with webhookSecret as baton-webhook), refusing a bad shape by its path', async () => {
    const secretKeys = ['project:pullPassword', 'project:pushSecrets', 'project:webhookSecret'];
    const pushSecretsOf = (name: string) => {
      const run = registered.find((r) => r.type === 'pulumi-nodejs:dynamic/baton:HandoffRun' && r.name === name)!;
      expect(isSecretValue(run.inputs.pushSecrets)).toBe(true);
      return (run.inputs.pushSecrets as { value: unknown }).value;
    };
    pulumi.runtime.setAllConfig(
      {
        ...BASE_CONFIG,
        'project:clusterName': 'with-push-secrets',
        'project:pushSecrets': JSON.stringify({
          'argocd-redis': { auth: 'redis-pw' },
          'argocd-secret': { 'server.secretkey': 'k' },
        }),
        'project:webhookSecret': 'whsec',
      },
      secretKeys,
    );
    await resolved(handoffFromConfig(pulumi.secret('kc')).receipt);
    expect(pushSecretsOf('with-push-secrets')).toEqual({
      'argocd-redis': { auth: 'redis-pw' },
      'argocd-secret': { 'server.secretkey': 'k' },
      'baton-webhook': { secret: 'whsec' },
    });

    const refused = (pushSecrets: unknown, webhook?: string) => {
      pulumi.runtime.setAllConfig(
        {
          ...BASE_CONFIG,
          'project:pushSecrets': JSON.stringify(pushSecrets),
          ...(webhook ? { 'project:webhookSecret': webhook } : {}),
        },
        secretKeys,
      );
      try {
        handoffFromConfig(pulumi.secret('kc'));
      } catch (err) {
        expect(err).toBeInstanceOf(pulumi.RunError);
        expect((err as Error).message).not.toContain('hunter2');
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused({ 'argocd-redis': { auth: 42 } })).toMatch(
      /^stack config pushSecrets\["argocd-redis"\]\["auth"\]: expected string, received number; pushSecrets maps Secret names to maps of key: string value, e\.g\. pulumi config set --secret --path/,
    );
    expect(refused({ Bad_Name: { k: 'hunter2' } })).toMatch(
      /^stack config pushSecrets\["Bad_Name"\]: a Secret name is a DNS subdomain/,
    );
    expect(refused({ empty: {} })).toMatch(/^stack config pushSecrets\["empty"\]: a Secret needs at least one key/);
    expect(refused({ 'baton-webhook': { secret: 'hunter2' } }, 'hunter2')).toMatch(
      /webhookSecret and pushSecrets\["baton-webhook"\] both set the baton-webhook Secret; keep one/,
    );
  });
});
