import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import type { PulumiEnv } from '@baton/testenv/pulumi';
import * as pulumi from '@pulumi/pulumi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JWT_PATTERN } from '../../support/handoff-run.js';
import { inlineStack, kubeconfigText, pulumiEnv, stackCli, storedState } from './pulumi-fixture.js';

// `pulumi up` of stacks/existing-cluster from a shell, with the kubeconfig coming from another stack's output (a
// StackReference), as a program that created an EKS, GKE or AKS cluster in its own stack would provide it.
const STACK_DIR = fileURLToPath(new URL('../../../stacks/existing-cluster', import.meta.url));
const STACK = `ec${process.pid}`;
const MAKER_PROJECT = 'cluster-maker';
const MAKER_STACK = `maker${process.pid}`;

let cluster: Cluster;
let side: BatonControllerEnv;
let env: PulumiEnv;
let kubeconfig: string;
const printed: string[] = [];

// Bound once `env` exists (beforeAll).
const cli = (args: readonly string[], input?: string) => stackCli(env, STACK_DIR, STACK, printed).run(args, input);
const failing = (args: readonly string[]) => stackCli(env, STACK_DIR, STACK, printed).runFailing(args);

beforeAll(async () => {
  cluster = await startCluster({ name: `pulumi-existing-${process.pid}`, node: 'real' });
  side = await createBatonControllerEnv({
    kubeconfigPath: cluster.kubeconfigPath,
    clusterName: 'existing',
    realNode: cluster.realNode,
  });
  kubeconfig = await kubeconfigText(cluster.kubeconfigPath);
  env = await pulumiEnv();
  // The stack that "created the cluster": its only output is the kubeconfig, a secret.
  const maker = await inlineStack(env, {
    stackName: MAKER_STACK,
    projectName: MAKER_PROJECT,
    program: async () => ({ kubeconfig: pulumi.secret(kubeconfig) }),
  });
  await maker.up();
  await env.run(['stack', 'init', STACK], { cwd: STACK_DIR });
  const plain: Record<string, string> = {
    clusterName: 'existing',
    gitUrl: side.git.repoUrl('cluster-config'),
    gitPath: 'clusters/demo',
    gitRevision: side.revision,
    manifests: join(side.dir, 'push'),
    pullUsername: side.git.credentials.username,
    takeoverTimeoutSeconds: '150',
    auditLog: side.auditLogPath,
    signingKey: join(side.dir, 'audit', 'signing.key'),
    journalDir: join(side.dir, 'journal'),
  };
  await cli(['config', 'set-all', ...Object.entries(plain).flatMap(([k, v]) => ['--plaintext', `${k}=${v}`])]);
  await cli(['config', 'set', '--secret', 'pullPassword'], side.git.credentials.password);
  const webhook = parse(readFileSync(join(side.dir, 'webhook.yaml'), 'utf8')) as { secret: string };
  await cli(['config', 'set', '--secret', 'webhookSecret'], webhook.secret);
}, 600_000);

afterAll(async () => {
  await env?.run(['stack', 'rm', '--yes', '--force', STACK], { cwd: STACK_DIR }).catch(() => undefined);
  await env?.cleanup();
  expect(await env?.processes()).toEqual([]);
  await side?.stop();
  await cluster?.stop();
});

describe('pulumi CLI of stacks/existing-cluster', () => {
  it('refuses to run with neither kubeconfig nor clusterStack, saying which config key to set', async () => {
    const text = await failing(['preview']);
    expect(text).toContain('set exactly one of the config keys kubeconfig');
    expect(text).toContain('clusterStack');
  });

  it('hands off the cluster whose kubeconfig is another stack’s secret output (a StackReference)', async () => {
    await cli(['config', 'set', 'clusterStack', `organization/${MAKER_PROJECT}/${MAKER_STACK}`]);
    await cli(['up', '--yes']);
    const receipt = JSON.parse((await cli(['stack', 'output', '--json', 'receipt'])).stdout) as {
      outcome: string;
      revision: string;
      credential: { revokedAt: string | null };
      proof: { probeStatus: number };
    };
    expect(receipt).toMatchObject({ outcome: 'handed-off', revision: side.revision, proof: { probeStatus: 401 } });
    expect(receipt.credential.revokedAt).toBeTruthy();
  }, 300_000);

  it('keeps the referenced kubeconfig and every secret out of the state file and the output', async () => {
    const state = await storedState(env, 'baton-existing-cluster', STACK);
    const key = /client-key-data: (\S+)/.exec(kubeconfig)?.[1];
    expect(key).toBeTruthy();
    for (const text of [state, printed.join('\n')]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(side.git.credentials.password);
      expect(text).not.toMatch(JWT_PATTERN);
    }
  });
});
