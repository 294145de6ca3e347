import { execFile, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { type HandoffSummary, runHandoff } from '@baton/core';
import { clientsFromKubeconfigFile, findBootstrapLeftovers } from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv, deleteNamespacesAndWait } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, statusOfCall } from '../../support/kube.js';
import { useTempDirs } from '../../support/temp-dirs.js';

const tempDir = useTempDirs();

// Revocation on every path, whatever the journal, the audit log, the signals and the API server do; cleanup that a
// labelled decoy cannot mislead; an operator kubeconfig whose CA, certificate and key are files. Each run hands off
// to baton-controller, run from its pinned image by the bed's real node.
const execFileAsync = promisify(execFile);
const baton = (args: string[]) => execFileAsync(process.execPath, [CLI, ...args]);

let cluster: Cluster;
const envs: BatonControllerEnv[] = [];

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
});

afterAll(async () => {
  for (const e of envs) await e.stop();
  await cluster?.stop();
});

/**
 * A fresh handoff on the same cluster, to a new Git repository: the earlier controller, its objects and the receipt
 * go with baton-system (its pull credential holds the earlier Git password).
 */
async function freshRun(o: { kubeconfigPath?: string } = {}) {
  await deleteNamespacesAndWait(cluster.kubeconfigPath, ['baton-system']);
  const e = await createBatonControllerEnv({
    kubeconfigPath: o.kubeconfigPath ?? cluster.kubeconfigPath,
    clusterName: cluster.name,
    realNode: cluster.realNode,
  });
  envs.push(e);
  return e;
}

async function expectNothingLeft(e: BatonControllerEnv) {
  const { operator } = testHandoffDeps(e.loaded, cluster.kubeconfigPath).deps;
  expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
  expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
}

describe('revocation on every path', () => {
  it('retries a revoke while the API server is stopped (SIGSTOP) and proves it once it answers (SIGCONT)', async () => {
    const e = await freshRun();
    const apiserver = cluster.pids['kube-apiserver']!;
    let stoppedAt = 0;
    const { deps, captured } = testHandoffDeps(e.loaded, cluster.kubeconfigPath, {
      // Each request may wait 2 s (a revoke 3 × 2 s): the stop (9 s) fails the first revoke, and a busy machine's
      // apiserver (a real node beside it) still answers the steps before it in time (1 s was seen to expire on
      // closing the confinement).
      requestTimeoutMs: 2000,
      onStep: (step) => {
        if (step !== 'revoke') return;
        process.kill(apiserver, 'SIGSTOP');
        stoppedAt = Date.now();
        setTimeout(() => process.kill(apiserver, 'SIGCONT'), 9000);
      },
    });
    let s: HandoffSummary;
    try {
      s = await runHandoff(e.loaded, deps);
    } finally {
      process.kill(apiserver, 'SIGCONT');
    }
    expect(s.outcome, s.error).toBe('handed-off');
    expect(captured.text()).toContain('revoke failed; retrying');
    expect(Date.parse(s.credential!.secretDeletedAt!)).toBeGreaterThanOrEqual(stoppedAt + 4000);
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    await expectNothingLeft(e);
  });

  it('revokes and proves when the journal cannot be written from the takeover on', async () => {
    const e = await freshRun();
    const journal = join(e.loaded.plan.journalDir, `${e.loaded.plan.cluster.name}.jsonl`);
    const { deps, captured } = testHandoffDeps(e.loaded, cluster.kubeconfigPath, {
      onStep: (step) => {
        if (step !== 'takeover') return;
        // Root writes through file modes: a directory where the journal file was fails every append (EISDIR).
        rmSync(journal);
        mkdirSync(journal);
      },
    });
    const s = await runHandoff(e.loaded, deps);
    expect(captured.text()).toContain('could not append to the journal');
    // The earlier run's controller owns its CRD (and cluster roles) still: this run pushes the rest, a GitSync among
    // it, whose kind comes from the CRD in the whole set.
    expect(captured.text()).toContain('the controller already owns part of the set: pushing only the rest');
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    await expectNothingLeft(e);
    rmSync(journal, { recursive: true });
  });

  it('keeps an event the audit log refused in the journal, exits failed saying so, and the next run appends it', async () => {
    const e = await freshRun();
    mkdirSync(e.auditLogPath);
    const { deps } = testHandoffDeps(e.loaded, cluster.kubeconfigPath);
    const first = await runHandoff(e.loaded, deps);
    expect(first.outcome).toBe('failed');
    expect(first.failedStep).toBe('record');
    expect(first.error).toContain('the event is kept in the journal');
    expect(first.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    rmSync(e.auditLogPath, { recursive: true });
    const { stdout } = await baton(['up', '--plan', e.planPath, '-o', 'json']);
    const second = JSON.parse(stdout) as HandoffSummary;
    expect(second.outcome).toBe('already-handed-off');
    expect(second.credential).toBeUndefined();
    const entries = [];
    for await (const x of readEntries(e.auditLogPath)) entries.push(x.statement.predicate);
    expect(entries.map((x) => [x.runId, x.outcome])).toEqual([[first.runId, 'handed-off']]);
    expect(entries[0]!.revocation?.directRequest.statusCode).toBe(401);
    expect(await verifyLog(e.auditLogPath, await loadTrustedKeys(e.keysPath))).toMatchObject({ ok: true, entries: 1 });
  });

  it('a second SIGINT during the revoke does not stop baton up before the credential is revoked and proven', async () => {
    // SIGINT as the takeover starts: the controller's Pod has not even started then.
    const e = await freshRun();
    const child = spawn(process.execPath, [CLI, 'up', '--plan', e.planPath, '-o', 'json', '--verbose'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let sent = 0;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      if (sent === 0 && stderr.includes('"step":"takeover"')) {
        sent++;
        child.kill('SIGINT');
      } else if (sent === 1 && stderr.includes('"step":"revoke"')) {
        sent++;
        child.kill('SIGINT');
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(sent).toBe(2);
    expect(code).toBe(1);
    expect(stderr).toContain('still revoking, proving and recording');
    const s = JSON.parse(stdout) as HandoffSummary;
    expect(s.outcome).toBe('aborted');
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    expect(stdout + stderr).not.toMatch(JWT_PATTERN);
    await expectNothingLeft(e);
  });
});

describe('cleanup that a label cannot mislead', () => {
  it('baton revoke deletes only objects baton created and reports labelled decoys', async () => {
    const e = envs.at(-1)!;
    const admin = adminClients(cluster.kubeconfigPath);
    const labels = { 'baton.dev/component': 'bootstrap-credential', 'baton.dev/run-id': 'decoy' };
    await admin.core.createNamespace({ body: { metadata: { name: 'tenant' } } }).catch(() => {});
    // The controller's own ServiceAccount (its profile pushed it) must stay.
    expect(
      await statusOfCall(() =>
        admin.core.readNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-controller' }),
      ),
    ).toBe(200);
    // The decoy of the review: a Role named like the controller, labelled as a run's bootstrap object.
    await admin.rbac.createNamespacedRole({
      namespace: 'tenant',
      body: { metadata: { name: 'baton-controller', labels }, rules: [] },
    });
    // Named like a run's object, but created by someone else (no baton-mint in its managedFields).
    await admin.core.createNamespacedServiceAccount({
      namespace: 'baton-system',
      body: { metadata: { name: 'baton-bootstrap-decoy', labels } },
    });
    const { stdout, stderr } = await baton(['revoke', '--plan', e.planPath, '-o', 'json']);
    expect(JSON.parse(stdout)).toEqual([]);
    expect(stderr).toContain('not deleted: Role/tenant/baton-controller: its name is not baton-bootstrap-decoy');
    expect(stderr).toContain(
      'not deleted: ServiceAccount/baton-system/baton-bootstrap-decoy: it was not created by baton',
    );
    for (const read of [
      () => admin.core.readNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-controller' }),
      () => admin.rbac.readNamespacedRole({ namespace: 'tenant', name: 'baton-controller' }),
      () => admin.core.readNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-bootstrap-decoy' }),
    ])
      expect(await statusOfCall(read)).toBe(200);
    await admin.core.deleteNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-bootstrap-decoy' });
  });
});

describe('an operator kubeconfig with files', () => {
  it('hands off with certificate-authority, client-certificate and client-key as file paths', async () => {
    const kubeconfigPath = writeFileKubeconfig();
    const e = await freshRun({ kubeconfigPath });
    const { deps } = testHandoffDeps(e.loaded, kubeconfigPath, {
      operator: clientsFromKubeconfigFile(kubeconfigPath),
    });
    expect(deps.operator.caData).toBeUndefined();
    const s = await runHandoff(e.loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.confinement?.probeDenied).toBe(true);
    expect(s.proof?.probeStatus).toBe(401);
    await expectNothingLeft(e);
  });
});

/** The admin kubeconfig rewritten with its CA, certificate and key in files next to it (as minikube writes them). */
function writeFileKubeconfig(): string {
  const admin = adminClients(cluster.kubeconfigPath).kc;
  const c = admin.getCurrentCluster()!;
  const u = admin.getCurrentUser()!;
  const dir = tempDir('kubeconfig-files-');
  const file = (name: string, b64: string | undefined) => {
    writeFileSync(join(dir, name), Buffer.from(b64 ?? '', 'base64'), { mode: 0o600 });
    return join(dir, name);
  };
  const path = join(dir, 'config');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: c.server, 'certificate-authority': file('ca.crt', c.caData) } }],
      users: [
        {
          name: 'u',
          user: { 'client-certificate': file('client.crt', u.certData), 'client-key': file('client.key', u.keyData) },
        },
      ],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    }),
    { mode: 0o600 },
  );
  return path;
}
