import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { clientsFromKubeconfigFile, findBootstrapLeftovers } from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import type { PulumiEnv, PulumiRunResult } from '@baton/testenv/pulumi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JWT_PATTERN } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft } from '../../support/kube.js';
import { isGone, kubeClients, kubeconfigText, pulumiEnv, stackCli, storedState } from './pulumi-fixture.js';

// `pulumi preview/up/refresh/destroy` of stacks/local from a shell in its directory, through the real CLI, our
// Node.js language host and the dynamic-provider host, against a real cluster, Git server and baton-controller.
const STACK_DIR = fileURLToPath(new URL('../../../stacks/local', import.meta.url));
const PROJECT = 'baton-local';
const STACK = `it${process.pid}`;
const RUN_TYPE = 'pulumi-nodejs:dynamic/baton:HandoffRun';
const RUN_URN = `urn:pulumi:${STACK}::${PROJECT}::baton:index:Handoff$${RUN_TYPE}::pulumi-local`;

let cluster: Cluster;
let side: BatonControllerEnv;
let env: PulumiEnv;
let admin: ReturnType<typeof kubeClients>;
let kubeconfig: string;
let webhookSecret: string;
/** Everything the CLI printed, for the secret grep. */
const printed: string[] = [];

// Bound once `env` exists (beforeAll).
const cli = (args: readonly string[]): Promise<PulumiRunResult> => stackCli(env, STACK_DIR, STACK, printed).run(args);
/** Runs a command that must fail; returns everything it printed (the CLI's error carries stdout and stderr). */
const cliFailing = (args: readonly string[]) => stackCli(env, STACK_DIR, STACK, printed).runFailing(args);

/** `pulumi config set` with the value on stdin (env.run's `input`), never in argv. */
async function setConfig(key: string, value: string, secret = false): Promise<void> {
  await env.run(['config', 'set', ...(secret ? ['--secret'] : []), key, '--stack', STACK], {
    cwd: STACK_DIR,
    stack: STACK,
    input: value,
  });
}

async function stackOutput<T>(name: string): Promise<T> {
  return JSON.parse((await cli(['stack', 'output', '--json', name])).stdout) as T;
}

interface StateResource {
  type: string;
  outputs?: { receipt?: StackReceipt };
}

async function stateResources(): Promise<StateResource[]> {
  const state = JSON.parse((await cli(['stack', 'export'])).stdout) as { deployment: { resources?: StateResource[] } };
  return state.deployment.resources ?? [];
}

async function resourceTypes(): Promise<string[]> {
  return (await stateResources()).map((r) => r.type);
}

/** The receipt the HandoffRun resource holds in the state (what refresh rewrites; stack outputs it does not). */
async function storedReceipt(): Promise<StackReceipt | undefined> {
  return (await stateResources()).find((r) => r.type === RUN_TYPE)?.outputs?.receipt;
}

interface AuditEvent {
  verb: string;
  stage?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; namespace?: string; name?: string };
}

/**
 * Apiserver audit events from `offset` (bytes) on. Sliced as bytes, then decoded: one multi-byte character earlier in
 * the log (a policy's message) moved a character slice into the middle of a line (CI, 2026-12-05).
 */
function apiserverEventsSince(offset: number): AuditEvent[] {
  return readFileSync(cluster.auditLogPath!)
    .subarray(offset)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent);
}

const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];

// What the test bed's own agents write with the admin identity (the node and its lease, the Pods kubelet reports),
// and Events: never baton's.
const TEST_BED_RESOURCES = ['nodes', 'pods', 'events'];

/**
 * Writes by the operator's identity (kubeconfig user `baton-admin`) to anything but the test bed's own objects, and
 * any request at all of a bootstrap identity. Writes by the cluster's own controllers and by baton-controller
 * (`system:` users) are not baton's.
 */
function batonWrites(events: readonly AuditEvent[]): string[] {
  return events
    .filter((e) => e.stage === 'ResponseComplete')
    .filter((e) => {
      const user = e.user?.username ?? '';
      if (user.includes('baton-bootstrap')) return true;
      if (!WRITE_VERBS.includes(e.verb) || user.startsWith('system:')) return false;
      return !TEST_BED_RESOURCES.includes(e.objectRef?.resource ?? '') && e.objectRef?.namespace !== 'kube-node-lease';
    })
    .map(
      (e) =>
        `${e.user?.username} ${e.verb} ${e.objectRef?.resource}/${e.objectRef?.namespace ?? ''}/${e.objectRef?.name}`,
    );
}

interface StackReceipt {
  outcome: string;
  runId: string;
  revision: string | null;
  credential: { fingerprint: string; revokedAt: string | null; liveSeconds: number; rules: unknown[] } | null;
  proof: { probeStatus: number; tokenReviewAuthenticated: boolean } | null;
  confinement: { probeDenied: boolean; planDigest: string } | null;
  audit: { logPath: string; index: number; eventId: string; checkpoint: string } | null;
  receiptName: string;
}

beforeAll(async () => {
  cluster = await startCluster({ name: `pulumi-handoff-${process.pid}`, node: 'real' });
  side = await createBatonControllerEnv({
    kubeconfigPath: cluster.kubeconfigPath,
    clusterName: 'pulumi-local',
    realNode: cluster.realNode,
  });
  admin = kubeClients(cluster.kubeconfigPath);
  kubeconfig = await kubeconfigText(cluster.kubeconfigPath);
  webhookSecret = (parse(readFileSync(join(side.dir, 'webhook.yaml'), 'utf8')) as { secret: string }).secret;
  env = await pulumiEnv();
  await env.run(['stack', 'init', STACK], { cwd: STACK_DIR });
  await setConfig('kubeconfig', kubeconfig, true);
  await setConfig('clusterName', 'pulumi-local');
  await setConfig('gitUrl', side.git.repoUrl('cluster-config'));
  await setConfig('gitPath', 'clusters/demo');
  await setConfig('gitRevision', side.revision);
  await setConfig('manifests', join(side.dir, 'push'));
  await setConfig('pullUsername', side.git.credentials.username);
  // Wrong at first: the controller cannot pull, so the first handoff fails at the takeover (see below).
  await setConfig('pullPassword', 'not-the-password', true);
  await setConfig('webhookSecret', webhookSecret, true);
  await setConfig('takeoverTimeoutSeconds', '20');
  await setConfig('auditLog', side.auditLogPath);
  await setConfig('signingKey', join(side.dir, 'audit', 'signing.key'));
  await setConfig('journalDir', join(side.dir, 'journal'));
});

afterAll(async () => {
  // Removes the stack and stacks/local/Pulumi.<stack>.yaml.
  await env?.run(['stack', 'rm', '--yes', '--force', STACK], { cwd: STACK_DIR }).catch(() => undefined);
  await env?.cleanup();
  expect(await env?.processes()).toEqual([]);
  await side?.stop();
  await cluster?.stop();
});

describe('pulumi CLI of stacks/local: the Handoff component', () => {
  it('previews the push plan (objects, digest, RBAC, confinement) and writes nothing to the cluster', async () => {
    const offset = statSync(cluster.auditLogPath!).size;
    const r = await cli(['preview']);
    expect(r.stdout).toMatch(/baton push plan sha256:[0-9a-f]{64}: 11 objects \(2 push-only\)/);
    expect(r.stdout).toContain('push Deployment/baton-system/baton-controller');
    expect(r.stdout).toContain('push Secret/baton-system/baton-pull-credential (push-only, never in Git)');
    expect(r.stdout).toMatch(/credential system:serviceaccount:baton-system:baton-bootstrap-<run-id>: \d+ RBAC rules/);
    expect(r.stdout).toMatch(/confinement baton-bootstrap-<run-id>: \d+ validations/);
    expect(r.stdout).toContain('baton:index:Handoff');
    expect(batonWrites(apiserverEventsSince(offset))).toEqual([]);
    expect(await isGone(() => admin.core.readNamespace({ name: 'baton-system' }))).toBe(true);
  });

  it('fails the preview of a bad input, naming its property path', async () => {
    await setConfig('takeoverTimeoutSeconds', '-5');
    const text = await cliFailing(['preview']);
    expect(text).toMatch(/property takeover\.timeoutSeconds value .* has a problem: Too small/);
    await setConfig('takeoverTimeoutSeconds', '20');
  });

  it('fails the update when the controller never takes over, keeps nothing in state, and still revokes and records', async () => {
    const text = await cliFailing(['up', '--yes']);
    expect(text).toMatch(/baton handoff \S+ of cluster pulumi-local ended failed at step takeover/);
    expect(text).toMatch(/The bootstrap credential sha256:[0-9a-f]{16,64} was revoked at /);
    expect(text).toMatch(/recorded as audit event \S+ at index 0/);
    expect(await resourceTypes()).not.toContain(RUN_TYPE);
    const verdict = await verifyLog(side.auditLogPath, await loadTrustedKeys(side.keysPath));
    expect(verdict).toMatchObject({ ok: true, entries: 1 });
  });

  it('hands the cluster off with `pulumi up` and exports the receipt', async () => {
    await setConfig('pullPassword', side.git.credentials.password, true);
    // The controller backs off after failed pulls (up to 30 s) before it reads the pushed credential again.
    await setConfig('takeoverTimeoutSeconds', '150');
    const offset = statSync(cluster.auditLogPath!).size;
    const r = await cli(['up', '--yes']);
    // The stack and the component stayed from the failed update; only the handoff is created.
    expect(r.stdout).toMatch(/\+ 1 created/);
    const receipt = await stackOutput<StackReceipt>('receipt');
    expect(receipt).toMatchObject({
      outcome: 'handed-off',
      revision: side.revision,
      proof: { probeStatus: 401, tokenReviewAuthenticated: false },
      confinement: { probeDenied: true },
      audit: { logPath: side.auditLogPath, index: 1 },
      receiptName: 'baton-system/baton-receipt',
    });
    expect(receipt.credential?.revokedAt).toBeTruthy();
    expect(receipt.credential?.liveSeconds).toBeGreaterThan(0);
    expect(receipt.audit?.eventId).toBe(receipt.runId);
    // The push went through the bootstrap identity: the same audit check as the preview's sees it now.
    expect(batonWrites(apiserverEventsSince(offset)).length).toBeGreaterThan(0);
    const inCluster = await admin.core.readNamespacedConfigMap({ namespace: 'baton-system', name: 'baton-receipt' });
    expect(inCluster.data?.runId).toBe(receipt.runId);
    expect(await resourceTypes()).toContain(RUN_TYPE);
    const verdict = await verifyLog(side.auditLogPath, await loadTrustedKeys(side.keysPath));
    expect(verdict).toMatchObject({ ok: true, entries: 2 });
    // What the gitops rows check of a `pulumi up` handoff (this file is the baton-controller row's): nothing of the
    // credential or its confinement left, and the event says it came through Pulumi with this profile.
    expect(await findBootstrapLeftovers(clientsFromKubeconfigFile(cluster.kubeconfigPath), 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
    const events = [];
    for await (const e of readEntries(side.auditLogPath)) events.push(e.statement.predicate);
    expect(events.map((e) => [e.runId, e.outcome, e.actor.via, e.plan.push.profile]).at(-1)).toEqual([
      receipt.runId,
      'handed-off',
      'pulumi',
      'baton-controller',
    ]);
  });

  it('changes nothing on a second `pulumi up`, and touches no controller-owned object', async () => {
    const offset = statSync(cluster.auditLogPath!).size;
    const r = await cli(['up', '--yes', '--expect-no-changes']);
    expect(r.stdout).toMatch(/3 unchanged/);
    expect(batonWrites(apiserverEventsSince(offset))).toEqual([]);
  });

  it('shows no drift on `pulumi refresh` (the receipt read with the operator credential)', async () => {
    const before = await storedReceipt();
    expect(before?.outcome).toBe('handed-off');
    const offset = statSync(cluster.auditLogPath!).size;
    const r = await cli(['refresh', '--yes', '--expect-no-changes']);
    expect(r.stdout).toMatch(/3 unchanged/);
    const reads = apiserverEventsSince(offset).filter((e) => e.objectRef?.name === 'baton-receipt');
    expect(reads.map((e) => `${e.user?.username} ${e.verb}`)).toContain('baton-admin get');
    expect(batonWrites(apiserverEventsSince(offset))).toEqual([]);
    expect(await storedReceipt()).toEqual(before);
  });

  it('refuses a change to what was pushed in preview, naming the property and the reason', async () => {
    await setConfig('gitPath', 'clusters/elsewhere');
    const text = await cliFailing(['preview']);
    expect(text).toContain('controller.source.path');
    expect(text).toContain('the cluster is handed off; change it in Git');
    expect(text).toContain('pulumi up --replace');
    await setConfig('gitPath', 'clusters/demo');
  });

  it('keeps every secret of the run out of the state file, the engine output and the logs', async () => {
    const state = await storedState(env, PROJECT, STACK);
    const logsDir = join(side.dir, 'logs');
    const logs = readdirSync(logsDir).map((f) => readFileSync(join(logsDir, f), 'utf8'));
    expect(logs.length).toBeGreaterThan(0);
    const everything = [state, ...printed, ...logs].join('\n');
    const secrets = {
      pullPassword: side.git.credentials.password,
      webhookSecret,
      clientKey: /client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? 'missing',
    };
    for (const [name, value] of Object.entries(secrets)) {
      expect(value.length, name).toBeGreaterThan(8);
      // Booleans, so that a failure cannot print the secret.
      expect(everything.includes(value), name).toBe(false);
    }
    expect(JWT_PATTERN.test(everything), 'a bootstrap token').toBe(false);
    // Still, the run really used them: the state has the kubeconfig and credential as ciphertext.
    expect(state).toContain('"ciphertext"');
  });

  it('runs a new handoff on `pulumi up --replace`, which finds the cluster already pulling the declared revision', async () => {
    const before = await stackOutput<StackReceipt>('receipt');
    await cli(['up', '--yes', '--replace', RUN_URN]);
    const after = await stackOutput<StackReceipt>('receipt');
    expect(after.runId).not.toBe(before.runId);
    // Core's receipt check: the cluster already pulls the declared revision, so the new run mints and pushes nothing
    // (a replacement with another Git source would need core to hand a handed-off cluster off again).
    expect(after.outcome).toBe('already-handed-off');
  });

  it('refuses a replacement that declares a revision the handed-off cluster does not pull', async () => {
    const before = await stackOutput<StackReceipt>('receipt');
    await setConfig('gitRevision', 'e'.repeat(40));
    const text = await cliFailing(['up', '--yes', '--replace', RUN_URN]);
    expect(text).toContain(`already handed off at revision ${side.revision}, not the declared ${'e'.repeat(40)}`);
    await setConfig('gitRevision', side.revision);
    expect(await stackOutput<StackReceipt>('receipt')).toEqual(before);
    expect(await resourceTypes()).toContain(RUN_TYPE);
  });

  it('leaves the controller running on `pulumi destroy`, and says so', async () => {
    const r = await cli(['destroy', '--yes']);
    expect(`${r.stdout}\n${r.stderr}`).toContain(
      'stays handed off: its baton-controller controller keeps running and pulling from Git',
    );
    expect(await resourceTypes()).toEqual([]);
    const dep = await admin.apps.readNamespacedDeployment({ namespace: 'baton-system', name: 'baton-controller' });
    expect(dep.metadata?.name).toBe('baton-controller');
  });
});
