import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrustedKeys, type KeylessIdentity, readEntries } from '@baton/audit';
import { type HandoffSummary, loadManifestSet, runHandoff } from '@baton/core';
import { ConfigError, ImageVerifyError } from '@baton/errors';
import { signLayout } from '@baton/image';
import { clientsFromKubeconfigFile, clientsImpersonating, findBootstrapLeftovers, probeToken } from '@baton/kube';
import { type Cluster, freePorts, startCluster } from '@baton/testenv';
import { type GitServer, startGitServer } from '@baton/testenv/git';
import { startRegistry } from '@baton/testenv/images';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attacker, bootstrapServiceAccount } from '../../support/attacker.js';
import { CONTROLLER_MANIFESTS, createHandoffEnv, type HandoffEnv } from '../../support/handoff-env.js';
import { auditEventsBy, CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, eventually, statusOfCall } from '../../support/kube.js';
import {
  RELEASE_KEY,
  RELEASE_WORKFLOW,
  type SignedImageRegistry,
  startSignedImageRegistry,
} from '../../support/signed-images.js';
import { useTempDirs } from '../../support/temp-dirs.js';

const tempDir = useTempDirs();

const REFUSED = fileURLToPath(new URL('../../fixtures/handoff/refused', import.meta.url));

let cluster: Cluster;
let git: GitServer;
const envs: HandoffEnv[] = [];

beforeAll(async () => {
  // No node: every handoff here fails or is refused before a controller could run (the takeover never comes), so
  // no Pod needs to start; a fake node would only pretend Pods ran.
  cluster = await startCluster({ node: 'kwok', nodes: 0 });
  git = await startGitServer();
});

afterAll(async () => {
  for (const e of envs) await e.stop();
  await git?.stop();
  await cluster?.stop();
});

async function env(plan: Record<string, Record<string, unknown>> = {}, manifests?: string): Promise<HandoffEnv> {
  const e = await createHandoffEnv({
    kubeconfigPath: cluster.kubeconfigPath,
    git,
    plan,
    ...(manifests ? { manifests } : {}),
  });
  envs.push(e);
  return e;
}

/** The run ended revoked and proven, with an audit event of `outcome`, and left nothing behind. */
async function expectRevokedProvedRecorded(e: HandoffEnv, s: HandoffSummary, outcome: string, failedStep: string) {
  expect(s.outcome).toBe(outcome);
  expect(s.failedStep).toBe(failedStep);
  expect(s.proof?.probeStatus).toBe(401);
  expect(s.proof?.tokenReviewAuthenticated).toBe(false);
  expect(s.credential?.revokedAt).toBeTruthy();
  expect(s.audit?.index).toBe(0);
  const entries = [];
  for await (const entry of readEntries(e.auditLogPath)) entries.push(entry);
  expect(entries).toHaveLength(1);
  const predicate = entries[0]!.statement.predicate;
  expect(predicate.outcome).toBe(outcome);
  expect(predicate.failedStep).toBe(failedStep);
  expect(predicate.revocation?.directRequest.statusCode).toBe(401);
  expect(predicate.credential?.revokedAt).toBe(s.credential?.revokedAt);
  const { operator } = testHandoffDeps(e.loaded, cluster.kubeconfigPath).deps;
  expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
  expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
  expect(s.confinement?.removedAt).toBeTruthy();
  const revokedAt = Date.parse(s.credential!.revokedAt!);
  for (const ev of auditEventsBy(cluster.auditLogPath!, s.credential!.subject)) {
    expect(Date.parse(ev.stageTimestamp)).toBeLessThanOrEqual(revokedAt);
  }
}

describe('a handoff that does not complete', () => {
  it('refuses a manifest set with a Pod, a foreign cluster-admin binding and a foreign workload, and creates nothing', async () => {
    const dir = tempDir('refused-');
    cpSync(CONTROLLER_MANIFESTS, dir, { recursive: true });
    cpSync(join(REFUSED, 'pod.yaml'), join(dir, 'pod.yaml'));
    const e = await env({}, dir);
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    const err = await runHandoff(e.loaded, deps).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('pod.yaml#0 (line 1): Pod "default/sneaky" is refused');
    const admin = adminClients(cluster.kubeconfigPath);
    expect(await statusOfCall(() => admin.core.readNamespace({ name: 'baton-system' }))).toBe(404);
    expect(await statusOfCall(() => admin.core.readNamespace({ name: 'gitops-system' }))).toBe(404);
    expect(await statusOfCall(() => admin.core.readNamespacedPod({ namespace: 'default', name: 'sneaky' }))).toBe(404);
    expect(await statusOfCall(() => admin.rbac.readClusterRoleBinding({ name: 'ci-admin' }))).toBe(404);
    // Through the CLI it is a usage/config error: exit 2, the reason on stderr.
    const cli = spawnSync(process.execPath, [CLI, 'up', '--plan', e.planPath], { encoding: 'utf8' });
    expect(cli.status).toBe(2);
    expect(cli.stderr).toContain('ClusterRoleBinding "ci-admin" binds ClusterRole cluster-admin');
    expect(await statusOfCall(() => admin.core.readNamespace({ name: 'baton-system' }))).toBe(404);
  });

  it('controller never ready: times out, revokes, proves, records a failed event', async () => {
    const e = await env({ takeover: { timeoutSeconds: 3 } });
    const { deps, captured } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    const s = await runHandoff(e.loaded, deps);
    expect(s.error).toContain('controller takeover (takeover.timeoutSeconds) did not happen within 3 s');
    await expectRevokedProvedRecorded(e, s, 'failed', 'takeover');
    expect(captured.text()).not.toMatch(JWT_PATTERN);
  });

  it('push-window budget exceeded: revokes, proves, records a failed event', async () => {
    const e = await env({ push: { budgetSeconds: 2 }, takeover: { timeoutSeconds: 60 } });
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    const s = await runHandoff(e.loaded, deps);
    expect(s.error).toContain('push window budget of 2 s exceeded (push.budgetSeconds)');
    // Budget counts from issue: the wait ended about 2 s after the credential was minted.
    expect(s.stepDurationsMs.takeover).toBeLessThan(4000);
    await expectRevokedProvedRecorded(e, s, 'failed', 'takeover');
  });

  it('SIGTERM to baton up mid-wait: revokes, proves, records an aborted event, exits 1', async () => {
    const e = await env({ takeover: { timeoutSeconds: 120 } });
    const child = spawn(process.execPath, [CLI, 'up', '--plan', e.planPath, '-o', 'json', '--verbose'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        stderr += d;
        if (stderr.includes('"step":"takeover"')) resolve();
      });
      child.on('exit', () => reject(new Error(`baton up exited before the takeover wait:\n${stderr}`)));
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(1);
    const s = JSON.parse(stdout) as HandoffSummary;
    expect(s.error).toContain('received SIGTERM');
    await expectRevokedProvedRecorded(e, s, 'aborted', 'takeover');
    expect(stdout + stderr).not.toMatch(JWT_PATTERN);
  });

  it('fails closed when the operator may not write admission policies: nothing minted, nothing pushed', async () => {
    const e = await env();
    const kubeconfig = await limitedOperatorKubeconfig();
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath, {
      operator: clientsFromKubeconfigFile(kubeconfig),
    });
    const s = await runHandoff(e.loaded, deps);
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('confine');
    expect(s.error).toContain('could not install the confinement');
    expect(s.error).toContain('the operator needs create, update and delete on validatingadmissionpolicies');
    expect(s.credential).toBeUndefined();
    // No identity was ever created for this run, so nothing could push.
    const mints = readFileSync(cluster.auditLogPath!, 'utf8')
      .split('\n')
      .filter(
        (l) =>
          l.includes(`"name":"baton-bootstrap-${s.runId}"`) &&
          l.includes('"resource":"serviceaccounts"') &&
          l.includes('"verb":"create"'),
      );
    expect(mints).toEqual([]);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
  });

  it('fails closed when the confinement does not deny the probe: nothing pushed, revoked, proven, recorded', async () => {
    const e = await env();
    const admin = adminClients(cluster.kubeconfigPath);
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath, {
      confinementTimeoutMs: 3000,
      // The binding vanishes between install and probe (as if another admin or an admission config disabled it):
      // after the mint, and the scope check waits until the API server has dropped it (a dry-run write outside the
      // plan, asked as the identity, is then allowed).
      onStep: async (step) => {
        if (step !== 'scope-check') return;
        const [binding] = (await confinementsLeft(admin)).filter((x) => x.includes('Binding/'));
        await admin.objects.delete({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicyBinding',
          metadata: { name: binding!.split('/')[1]! },
        });
        const as = clientsImpersonating(
          admin,
          `system:serviceaccount:baton-system:${await bootstrapServiceAccount(admin)}`,
        );
        // Where the plan creates the controller's ServiceAccount, so RBAC lets the identity create one (by any name).
        const outsideThePlan = {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'not-planned', namespace: e.loaded.plan.controller.namespace },
        };
        await expect
          .poll(() => statusOfCall(() => as.objects.create(outsideThePlan, undefined, 'All')), {
            timeout: 30_000,
            interval: 200,
          })
          .toBe(200);
      },
    });
    const s = await runHandoff(e.loaded, deps);
    expect(s.error).toContain('did not deny a probe write outside the plan within 3 s');
    expect(s.confinement?.probeDenied).toBe(false);
    await expectRevokedProvedRecorded(e, s, 'failed', 'scope-check');
    // The identity's only writes were the dry-run probes: nothing of the plan was written.
    const writes = auditEventsBy(cluster.auditLogPath!, s.credential!.subject).filter((x) =>
      ['create', 'update', 'patch', 'delete'].includes(x.verb),
    );
    const probes = writes.filter((x) => x.requestURI.includes('dryRun=All'));
    expect(probes.length).toBeGreaterThan(0);
    expect(
      writes
        .filter((x) => !x.requestURI.includes('dryRun=All'))
        .filter((x) => !['selfsubjectrulesreviews', 'selfsubjectreviews'].includes(x.objectRef?.resource ?? ''))
        .map((x) => `${x.verb} ${x.requestURI}`),
    ).toEqual([]);
  });
});

describe('a TokenRequest whose answer was lost, then a revoke that fails', () => {
  // The TokenRequest went through on the API server, but its answer never reached baton (a reset connection): a live
  // token exists that baton never saw. The revoke that follows fails too (every deletion of the identity's objects
  // fails). The token must then be confined to nothing: the policy is switched to deny-all and kept, so the lost
  // token (which the test kept, as a thief would) cannot write even the planned objects, until `baton revoke`.
  const lost: string[] = [];
  let e: HandoffEnv;
  let s: HandoffSummary;

  beforeAll(async () => {
    e = await env();
    const real = clientsFromKubeconfigFile(cluster.kubeconfigPath);
    const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    // Every deletion of the identity's objects fails (the Secret, the ServiceAccount, the RBAC): the token lives on.
    const failingDeletes = <T extends object>(api: T): T =>
      new Proxy(api, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop === 'createNamespacedServiceAccountToken')
            return async (...args: unknown[]) => {
              const r = await (value as (...a: unknown[]) => Promise<{ status?: { token?: string } }>).apply(
                target,
                args,
              );
              lost.push(r.status?.token ?? '');
              throw reset();
            };
          if (typeof prop === 'string' && prop.startsWith('delete'))
            return async () => {
              throw reset();
            };
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { deps, captured } = testHandoffDeps(e.loaded, cluster.kubeconfigPath, {
      operator: { ...real, core: failingDeletes(real.core), rbac: failingDeletes(real.rbac) },
      revokeRetryMs: 3_000,
    });
    s = await runHandoff(e.loaded, deps);
    expect(lost.length).toBeGreaterThan(0);
    for (const t of lost) expect(captured.text()).not.toContain(t);
  }, 120_000);

  it('fails at the mint, says the revoke failed, and keeps the confinement, closed', async () => {
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('mint');
    expect(s.confinement?.kept).toMatch(/token request whose answer baton never saw/);
    expect(s.confinement?.closedAt).toBeTruthy();
    expect(s.confinement?.removedAt).toBeNull();
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toHaveLength(2);
  });

  it('denies the lost token a write of a planned object, though its RBAC still allows it', async () => {
    const planned = loadManifestSet(e.loaded.plan).objects.find((m) => m.object.kind === 'ServiceAccount')!.object;
    const { out, attempt, apply } = attacker(cluster.kubeconfigPath, lost[0]!);
    await attempt('apply a planned object', () => apply(planned));
    expect(out['apply a planned object']!.status).toBe(403);
    expect(out['apply a planned object']!.message).toContain(
      'the push is complete and this identity may write nothing more',
    );
  });

  it('baton revoke removes the identity and the confinement, and the lost token stops authenticating', async () => {
    const r = spawnSync(process.execPath, [CLI, 'revoke', '--plan', e.planPath, '-o', 'json'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const t of lost) expect(r.stdout + r.stderr).not.toContain(t);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
    const { operator } = testHandoffDeps(e.loaded, cluster.kubeconfigPath).deps;
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
    await eventually(async () => (await probeToken(operator, lost[0]!)) === 401, 30_000, 'the lost token refused', 500);
  });
});

describe('images the trust policy does not vouch for', () => {
  // The controller Deployment runs an image of a real registry (on loopback, standing for ghcr.io through
  // push.images.mirrors); the plan trusts the release key. Nothing may be created before the refusal.
  let images: SignedImageRegistry;
  const IMAGE = 'ghcr.io/baton-dev/baton-controller';

  beforeAll(async () => {
    images = await startSignedImageRegistry(tempDir('images-'), 'baton-dev/baton-controller');
  }, 120_000);
  afterAll(async () => {
    await images?.registry.stop();
  });

  /**
   * A plan whose controller runs `image`, reading ghcr.io at `registry`, trusting the release key, or with `keyless`,
   * those identities of the image registry's private Sigstore.
   */
  async function imageEnv(
    image: string,
    registry = `http://${images.registry.host}`,
    keyless?: readonly KeylessIdentity[],
  ): Promise<HandoffEnv> {
    const dir = tempDir('images-set-');
    cpSync(CONTROLLER_MANIFESTS, dir, { recursive: true });
    const deployment = join(dir, '30-deployment.yaml');
    writeFileSync(deployment, readFileSync(deployment, 'utf8').replace(/image: \S+/, `image: ${image}`));
    const trustDir = tempDir('image-trust-');
    const trustedKeys = join(trustDir, 'trusted-keys.yaml');
    writeFileSync(
      trustedKeys,
      formatTrustedKeys({ origin: 'baton.dev/release', keys: [{ key: RELEASE_KEY.verifierKey }] }),
    );
    const trustedRoot = join(trustDir, 'trusted_root.json');
    writeFileSync(trustedRoot, JSON.stringify(images.sigstore.trustedRoot));
    const trust = keyless ? { keyless: { trustedRoot, identities: keyless } } : { trustedKeys };
    return env({ push: { images: { ...trust, mirrors: { 'ghcr.io': registry } } } }, dir);
  }

  /** What a run could create: namespaces, and the bootstrap identities, lock and receipt in baton-system. */
  async function clusterObjects(): Promise<string[]> {
    const admin = adminClients(cluster.kubeconfigPath);
    const ns = (await admin.core.listNamespace()).items.map((n) => `Namespace/${n.metadata?.name}`);
    const inBaton = async (list: () => Promise<{ items: { metadata?: { name?: string } }[] }>, kind: string) =>
      (await list().catch(() => ({ items: [] }))).items.map((o) => `${kind}/${o.metadata?.name}`);
    return [
      ...ns,
      ...(await inBaton(
        () => admin.core.listNamespacedServiceAccount({ namespace: 'baton-system' }),
        'ServiceAccount',
      )),
      ...(await inBaton(() => admin.core.listNamespacedSecret({ namespace: 'baton-system' }), 'Secret')),
      ...(await inBaton(() => admin.core.listNamespacedConfigMap({ namespace: 'baton-system' }), 'ConfigMap')),
      ...(await inBaton(() => admin.coordination.listNamespacedLease({ namespace: 'baton-system' }), 'Lease')),
    ].sort();
  }

  /** Runs `refused` and checks that the cluster holds what it held before, and the audit log stays empty. */
  async function expectNothingCreated(e: HandoffEnv, refused: () => Promise<void>): Promise<void> {
    const before = await clusterObjects();
    await refused();
    expect(await clusterObjects()).toEqual(before);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
    // Nothing to record either: the refusal came before the audit log was opened.
    expect(existsSync(e.auditLogPath) ? readFileSync(e.auditLogPath, 'utf8') : '').toBe('');
  }

  it.each([
    ['an unsigned image', 'unsigned', /: unsigned: http:\/\/127\.0\.0\.1:\d+ lists no signature/],
    ['an image signed by a key the plan does not trust', 'stranger', /which the trusted-keys file does not list/],
    ["another image's signature", 'borrowed', /: a signature of another image/],
  ] as const)('refuses %s before anything is minted, naming the image', async (_, which, why) => {
    const image = `${IMAGE}@${images.digests[which]}`;
    const e = await imageEnv(image);
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    await expectNothingCreated(e, async () => {
      const err = await runHandoff(e.loaded, deps).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(ImageVerifyError);
      expect((err as Error).message).toMatch(new RegExp(`^image ${image.replace(/[.]/g, '\\.')}: `));
      expect((err as Error).message).toMatch(why);
    });
  });

  it('refuses a keyless signature by an identity the plan does not trust, before anything is minted', async () => {
    const image = `${IMAGE}@${images.digests.keyless}`;
    const e = await imageEnv(image, undefined, [
      { issuer: RELEASE_WORKFLOW.issuer, subjectRegExp: String.raw`https://github\.com/baton-dev/.+` },
    ]);
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    await expectNothingCreated(e, async () => {
      const err = await runHandoff(e.loaded, deps).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(ImageVerifyError);
      expect((err as Error).message).toContain(
        `signed by ${RELEASE_WORKFLOW.subject} (issuer ${RELEASE_WORKFLOW.issuer}), which no trusted identity matches`,
      );
    });
  });

  it('baton plan (the built CLI) verifies a keyless signature and names the identity that signed it', async () => {
    const image = `${IMAGE}@${images.digests.keyless}`;
    const e = await imageEnv(image, undefined, [RELEASE_WORKFLOW]);
    const plan = spawnSync(process.execPath, [CLI, 'plan', '--plan', e.planPath, '-o', 'json'], { encoding: 'utf8' });
    expect(plan.stderr).toBe('');
    expect(plan.status).toBe(0);
    expect(JSON.parse(plan.stdout).images).toMatchObject({
      verification: 'verified',
      verified: [{ image, signedBy: `${RELEASE_WORKFLOW.subject} from ${RELEASE_WORKFLOW.issuer}` }],
    });
  });

  it("baton plan reads a registry that wants a login with the operator's Docker config, and prints no password", async () => {
    const password = 'registry-pass-never-printed';
    const locked = await startRegistry({ dir: tempDir('locked-registry-'), auth: { username: 'alice', password } });
    try {
      const { layout } = images.layout('signed', 'one');
      await signLayout(layout, 'ghcr.io/baton-dev/baton-controller', RELEASE_KEY);
      const digest = await locked.push(layout, 'baton-dev/baton-controller', 'signed');
      const image = `${IMAGE}@${digest}`;
      const e = await imageEnv(image, `http://${locked.host}`);
      const dockerConfig = tempDir('docker-config-');
      const plan = (auth?: string) => {
        writeFileSync(
          join(dockerConfig, 'config.json'),
          JSON.stringify({ auths: auth ? { [locked.host]: { auth } } : {} }),
        );
        return spawnSync(process.execPath, [CLI, 'plan', '--plan', e.planPath, '-o', 'json'], {
          encoding: 'utf8',
          env: { ...process.env, DOCKER_CONFIG: dockerConfig },
        });
      };
      const ok = plan(Buffer.from(`alice:${password}`).toString('base64'));
      expect(ok.status).toBe(0);
      expect(JSON.parse(ok.stdout).images).toMatchObject({ verification: 'verified', verified: [{ image }] });
      const none = plan();
      expect(none.status).toBe(1);
      expect(none.stdout).toContain(`run \`docker login ${locked.host}\``);
      const stale = plan(Buffer.from(`alice:${password}-old`).toString('base64'));
      expect(stale.status).toBe(1);
      expect(stale.stdout).toContain(`refused the login from ${join(dockerConfig, 'config.json')} (auths)`);
      for (const r of [ok, none, stale]) expect(`${r.stdout}${r.stderr}`).not.toContain(password);
    } finally {
      await locked.stop();
    }
  });

  it('refuses when the registry cannot be reached, and baton up exits 1 with the reason (-o json: image-verify)', async () => {
    const [port] = await freePorts(1);
    const image = `${IMAGE}@${images.digests.signed}`;
    const e = await imageEnv(image, `http://127.0.0.1:${port}`);
    await expectNothingCreated(e, async () => {
      const cli = spawnSync(process.execPath, [CLI, 'up', '--plan', e.planPath, '-o', 'json'], { encoding: 'utf8' });
      expect(cli.status).toBe(1);
      expect(JSON.parse(cli.stdout)).toMatchObject({ outcome: 'refused', errorCode: 'image-verify' });
      expect(cli.stderr).toContain(
        `baton: image ${image}: cannot read its signatures: cannot reach http://127.0.0.1:${port}: ECONNREFUSED`,
      );
    });
  });

  it('baton plan shows the verified image and its key; with the skip flag, loudly, that nothing was verified', async () => {
    const image = `${IMAGE}@${images.digests.signed}`;
    const e = await imageEnv(image);
    const plan = spawnSync(process.execPath, [CLI, 'plan', '--plan', e.planPath, '-o', 'json'], { encoding: 'utf8' });
    expect(plan.status).toBe(0);
    expect(JSON.parse(plan.stdout).images).toMatchObject({
      verification: 'verified',
      images: [image],
      verified: [{ image, digest: images.digests.signed, signedBy: RELEASE_KEY.verifierKey }],
    });
    const skipped = spawnSync(
      process.execPath,
      [CLI, 'plan', '--plan', e.planPath, '--insecure-skip-image-verify', '-o', 'json'],
      { encoding: 'utf8' },
    );
    expect(skipped.status).toBe(0);
    expect(skipped.stderr).toMatch(/^WARNING: --insecure-skip-image-verify: /);
    expect(JSON.parse(skipped.stdout).images).toEqual({ verification: 'skipped', images: [image], verified: [] });
    const unsigned = await imageEnv(`${IMAGE}@${images.digests.unsigned}`);
    const refused = spawnSync(process.execPath, [CLI, 'plan', '--plan', unsigned.planPath], { encoding: 'utf8' });
    expect(refused.status).toBe(1);
    expect(refused.stdout).toMatch(/^Images: +baton up would refuse them$/m);
  });
});

/** A kubeconfig for an operator who may do everything a handoff needs but write admission policies. */
async function limitedOperatorKubeconfig(): Promise<string> {
  const admin = adminClients(cluster.kubeconfigPath);
  const name = 'limited-operator';
  await admin.core
    .createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name } } })
    .catch(() => {});
  await admin.rbac
    .createClusterRole({
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: ['', 'apps', 'rbac.authorization.k8s.io', 'apiextensions.k8s.io', 'coordination.k8s.io'],
            resources: ['*'],
            verbs: ['*'],
          },
          { apiGroups: ['authentication.k8s.io', 'authorization.k8s.io'], resources: ['*'], verbs: ['create'] },
          { apiGroups: ['admissionregistration.k8s.io'], resources: ['*'], verbs: ['get', 'list'] },
          { nonResourceURLs: ['*'], verbs: ['get'] },
        ],
      },
    })
    .catch(() => {});
  await admin.rbac
    .createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: 'default' }],
      },
    })
    .catch(() => {});
  const token = await admin.core.createNamespacedServiceAccountToken({
    namespace: 'default',
    name,
    body: { spec: { expirationSeconds: 3600, audiences: [] } },
  });
  const c = admin.kc.getCurrentCluster()!;
  const path = join(tempDir('limited-'), 'kubeconfig');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: c.server, 'certificate-authority-data': c.caData } }],
      users: [{ name: 'u', user: { token: token.status?.token } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    }),
    { mode: 0o600 },
  );
  return path;
}
