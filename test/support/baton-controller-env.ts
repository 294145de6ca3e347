import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrustedKeys, generateSigningKey, writeSigningKeyFile } from '@baton/audit';
import { type LoadedPlan, loadHandoffPlan } from '@baton/core';
import { type GitServer, type PodRunner, startGitServer, startPodRunner } from '@baton/testenv';
import { stringify } from 'yaml';

const PROFILE = fileURLToPath(new URL('../../bootstrap-manifests/baton-controller', import.meta.url));

/** A plan that hands a cluster to baton's own controller, its Git repository, and the pod runner playing kubelet. */
export interface BatonControllerEnv {
  readonly dir: string;
  readonly git: GitServer;
  readonly revision: string;
  readonly planPath: string;
  readonly loaded: LoadedPlan;
  readonly auditLogPath: string;
  readonly keysPath: string;
  /** Secret values written to the plan's files, so tests can assert they never reach a log. */
  readonly secretValues: readonly string[];
  stop(options?: { keepFiles?: boolean }): Promise<void>;
}

/**
 * Renders bootstrap-manifests/baton-controller for a fresh Git repository (the push points the GitSync at it, and
 * Git carries the same files), writes the pull credential and webhook key files, a signing key and a plan, and
 * starts testenv's pod runner so the controller Deployment runs as a local process with its pod's identity.
 */
export async function createBatonControllerEnv(o: {
  kubeconfigPath: string;
  clusterName?: string;
}): Promise<BatonControllerEnv> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-e2e-'));
  const git = await startGitServer();
  let runner: PodRunner | undefined;
  try {
    await git.createRepo('cluster-config');
    const url = git.repoUrl('cluster-config');
    const files: Record<string, string> = {};
    await mkdir(join(dir, 'push'));
    for (const f of readdirSync(PROFILE).filter((x) => x.endsWith('.yaml'))) {
      let text = readFileSync(join(PROFILE, f), 'utf8');
      if (f.endsWith('gitsync.yaml'))
        text = text.replace(/url: .*/, `url: ${url}`).replace(/intervalSeconds: .*/, 'intervalSeconds: 5');
      writeFileSync(join(dir, 'push', f), text);
      files[`clusters/demo/baton-controller/${f}`] = text;
    }
    const revision = await git.commitFiles('cluster-config', files, 'baton-controller');
    const webhookKey = `whsec-${Math.random().toString(36).slice(2, 12)}`;
    writeFileSync(
      join(dir, 'pull.yaml'),
      stringify({ username: git.credentials.username, password: git.credentials.password }),
      { mode: 0o600 },
    );
    writeFileSync(join(dir, 'webhook.yaml'), stringify({ secret: webhookKey }), { mode: 0o600 });
    await mkdir(join(dir, 'audit'));
    const key = generateSigningKey('baton-e2e');
    await writeSigningKeyFile(join(dir, 'audit', 'signing.key'), key);
    const keysPath = join(dir, 'audit', 'keys.yaml');
    writeFileSync(keysPath, formatTrustedKeys({ origin: 'baton.dev/handoff', keys: [{ key: key.verifierKey }] }));
    const planPath = join(dir, 'plan.yaml');
    writeFileSync(
      planPath,
      stringify({
        apiVersion: 'baton.dev/v1alpha1',
        kind: 'HandoffPlan',
        cluster: { name: o.clusterName ?? 'e2e', kubeconfig: o.kubeconfigPath },
        push: {
          credential: 'bootstrap-token',
          profile: 'baton-controller',
          manifests: './push',
          budgetSeconds: 300,
          secrets: [{ name: 'baton-webhook', fromFile: './webhook.yaml' }],
        },
        pull: {
          credential: { secretName: 'baton-pull-credential', fromFile: './pull.yaml' },
          source: { url, ref: 'main', path: 'clusters/demo', revision },
        },
        controller: {
          name: 'baton-controller',
          namespace: 'baton-system',
          serviceAccount: 'baton-controller',
          status: {
            apiVersion: 'baton.dev/v1alpha1',
            kind: 'GitSync',
            name: 'baton-controller',
            revisionPath: 'status.lastAppliedRevision',
          },
        },
        takeover: { timeoutSeconds: 150 },
        audit: { logPath: './audit/handoff.log', signingKeyPath: './audit/signing.key' },
        journalDir: './journal',
      }),
    );
    runner = await startPodRunner({
      kubeconfigPath: o.kubeconfigPath,
      imagePrefix: 'ghcr.io/baton-dev/baton-controller',
    });
    const started = runner;
    return {
      dir,
      git,
      revision,
      planPath,
      loaded: loadHandoffPlan(planPath),
      auditLogPath: join(dir, 'audit', 'handoff.log'),
      keysPath,
      secretValues: [git.credentials.password, webhookKey],
      async stop(options = {}) {
        await started.stop();
        await git.stop();
        if (!options.keepFiles) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await runner?.stop();
    await git.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
