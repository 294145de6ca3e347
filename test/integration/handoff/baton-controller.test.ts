import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrustedKeys, generateSigningKey, loadTrustedKeys, verifyLog, writeSigningKeyFile } from '@baton/audit';
import { isOwnedBy, loadHandoffPlan, loadManifestSet, runHandoff } from '@baton/core';
import { findBootstrapLeftovers, readObject } from '@baton/kube';
import {
  type Cluster,
  type GitServer,
  type PodRunner,
  startCluster,
  startGitServer,
  startPodRunner,
} from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';

// End to end with baton's own controller: the push installs bootstrap-manifests/baton-controller, testenv's pod
// runner acts as the kubelet for its image (main.ts with a token bound to the pod), and the controller takes
// itself over from the Git server.
const PROFILE = fileURLToPath(new URL('../../../bootstrap-manifests/baton-controller', import.meta.url));

let cluster: Cluster;
let git: GitServer;
let runner: PodRunner;
let dir: string;
let planPath: string;
let revision: string;

beforeAll(async () => {
  [cluster, git] = await Promise.all([startCluster({ nodes: 1 }), startGitServer()]);
  dir = mkdtempSync(join(tmpdir(), 'baton-e2e-'));
  await git.createRepo('cluster-config');
  const url = git.repoUrl('cluster-config');
  // The push renders the GitSync to point at this cluster's repository; Git carries the same files.
  const files: Record<string, string> = {};
  await mkdir(join(dir, 'push'));
  for (const f of readdirSync(PROFILE).filter((x) => x.endsWith('.yaml'))) {
    let text = readFileSync(join(PROFILE, f), 'utf8');
    if (f.endsWith('gitsync.yaml'))
      text = text.replace(/url: .*/, `url: ${url}`).replace(/intervalSeconds: .*/, 'intervalSeconds: 5');
    writeFileSync(join(dir, 'push', f), text);
    files[`clusters/demo/baton-controller/${f}`] = text;
  }
  revision = await git.commitFiles('cluster-config', files, 'baton-controller');
  writeFileSync(
    join(dir, 'pull.yaml'),
    stringify({ username: git.credentials.username, password: git.credentials.password }),
    { mode: 0o600 },
  );
  writeFileSync(join(dir, 'webhook.yaml'), stringify({ secret: 'whsec-e2e-2f9a' }), { mode: 0o600 });
  await mkdir(join(dir, 'audit'));
  const key = generateSigningKey('baton-e2e');
  await writeSigningKeyFile(join(dir, 'audit', 'signing.key'), key);
  writeFileSync(
    join(dir, 'audit', 'keys.yaml'),
    formatTrustedKeys({ origin: 'baton.dev/handoff', keys: [{ key: key.verifierKey }] }),
  );
  planPath = join(dir, 'plan.yaml');
  writeFileSync(
    planPath,
    stringify({
      apiVersion: 'baton.dev/v1alpha1',
      kind: 'HandoffPlan',
      cluster: { name: 'e2e', kubeconfig: cluster.kubeconfigPath },
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
    kubeconfigPath: cluster.kubeconfigPath,
    imagePrefix: 'ghcr.io/baton-dev/baton-controller',
  });
});

afterAll(async () => {
  await runner?.stop();
  await git?.stop();
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('baton up with baton-controller', () => {
  it('pushes the profile with the scoped token, waits for the GitSync revision and ownership, revokes and proves', async () => {
    const loaded = loadHandoffPlan(planPath);
    const { deps, captured } = testHandoffDeps(loaded, cluster.kubeconfigPath);
    const s = await runHandoff(loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.takeover?.revisionSeen).toBe(revision);
    expect(s.takeover?.notTakenOver).toEqual([]);
    expect(s.takeover?.pushOnly).toEqual([
      'Secret/baton-system/baton-pull-credential',
      'Secret/baton-system/baton-webhook',
    ]);
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    // The controller manages itself: every object from Git is applied by baton-controller.
    for (const m of loadManifestSet(loaded.plan).objects) {
      if (m.object.kind === 'Secret') continue;
      const live = await readObject(deps.operator, m.object);
      expect(
        isOwnedBy(live!, 'baton-controller', 'baton-bootstrap'),
        `${m.object.kind}/${m.object.metadata.name}`,
      ).toBe(true);
    }
    expect(await findBootstrapLeftovers(deps.operator, 'baton-system')).toEqual([]);
    const verdict = await verifyLog(
      join(dir, 'audit', 'handoff.log'),
      await loadTrustedKeys(join(dir, 'audit', 'keys.yaml')),
    );
    expect(verdict.failures ?? []).toEqual([]);
    const text = captured.text();
    expect(text).not.toMatch(JWT_PATTERN);
    expect(text).not.toContain(git.credentials.password);
    expect(text).not.toContain('whsec-e2e-2f9a');
    expect(JSON.stringify(s)).not.toContain(git.credentials.password);
  });
});
