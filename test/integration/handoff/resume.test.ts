import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { readEntries } from '@baton/audit';
import { type HandoffSummary, loadManifestSet } from '@baton/core';
import {
  acquireHandoffLock,
  computeBootstrapRules,
  findBootstrapLeftovers,
  LockHeldError,
  type LockHolder,
  mintBootstrapIdentity,
  probeToken,
} from '@baton/kube';
import { deleteNamespacesAndWait } from '@baton/testbed';
import { describe, expect, it } from 'vitest';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { bootstrapMints, CLI, JWT_PATTERN, killDuringPush, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, eventually } from '../../support/kube.js';

const execFileAsync = promisify(execFile);
const baton = (args: string[]) => execFileAsync(process.execPath, [CLI, ...args]);

// baton-controller on a real node takes over: the killed run pushed part of its Deployment, the next run completes it.
const bed = useHandoffCluster();

describe('a run killed with kill -9', () => {
  let killedRunId = '';
  const started = Date.now();

  it('leaves a live bootstrap credential and the lock behind', async () => {
    const { cluster, env } = bed;
    const { signal, stderr } = await killDuringPush(env.planPath);
    expect(signal).toBe('SIGKILL');
    killedRunId = /"runId":"([^"]+)"/.exec(stderr)?.[1] ?? '';
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    const left = await findBootstrapLeftovers(operator, 'baton-system');
    expect(left.map((l) => l.runId)).toEqual([killedRunId]);
    // Its confinement is left too: the next run or baton revoke removes it with the identity.
    expect(left[0]?.hasConfinement).toBe(true);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toHaveLength(2);
    expect(
      (await operator.coordination.readNamespacedLease({ namespace: 'baton-system', name: 'baton-handoff' })).spec
        ?.holderIdentity,
    ).toContain(killedRunId);
  });

  it('the next baton up removes the leftovers, takes over the dead holder’s lock and completes the handoff', async () => {
    const { cluster, env } = bed;
    const { stdout, stderr } = await baton(['up', '--plan', env.planPath, '-o', 'json', '--verbose']);
    const s = JSON.parse(stdout) as HandoffSummary;
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.leftoversRemoved).toContain(`Secret/baton-system/baton-bootstrap-${killedRunId}`);
    expect(stderr).toContain('took over a stale handoff lock');
    expect(stdout + stderr).not.toMatch(JWT_PATTERN);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);

    // The audit trail: the killed run as `aborted` with its own credential, the completed run with exactly one.
    const entries = [];
    for await (const e of readEntries(env.auditLogPath)) entries.push(e.statement.predicate);
    expect(entries.map((e) => [e.runId, e.outcome])).toEqual([
      [killedRunId, 'aborted'],
      [s.runId, 'handed-off'],
    ]);
    const completed = entries.filter((e) => e.runId === s.runId);
    expect(completed).toHaveLength(1);
    expect(completed[0]!.credential?.fingerprint).toBe(s.credential?.fingerprint);
    expect(entries[0]!.credential?.fingerprint).not.toBe(s.credential?.fingerprint);
    expect(entries[0]!.credential?.revokedAt).toBeTruthy();
    // What the gitops rows check of a kill and rerun (this file is the baton-controller row's): two runs, two mints,
    // and no secret of the plan in the audit log.
    expect(bootstrapMints(cluster.auditLogPath!, started)).toHaveLength(2);
    const auditText = readFileSync(env.auditLogPath, 'utf8');
    for (const secret of env.secretValues) expect(auditText).not.toContain(secret);
  });

  it('baton revoke finds a leftover credential by label and kills it', async () => {
    const { cluster, env } = bed;
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    const rules = computeBootstrapRules(loadManifestSet(env.loaded.plan).objects.map((m) => m.object));
    const id = await mintBootstrapIdentity(operator, {
      runId: 'orphan',
      namespace: 'baton-system',
      rules,
      now: () => new Date(),
    });
    const { stdout } = await baton(['revoke', '--plan', env.planPath, '-o', 'json']);
    expect(JSON.parse(stdout)).toMatchObject([{ runId: 'orphan', deleted: 6 }]);
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
    // The API server caches a successful token check for 10 s; after that the orphan's token is refused.
    await eventually(async () => (await probeToken(operator, id.token)) === 401, 30_000, 'orphan token refused', 500);
  });

  it('baton revoke also removes the confinement of a run killed mid-push', async () => {
    const { cluster, env } = bed;
    // The controller, its objects and the receipt go with baton-system, so the next run mints and pushes again.
    await deleteNamespacesAndWait(cluster.kubeconfigPath, ['baton-system']);
    const admin = adminClients(cluster.kubeconfigPath);
    await killDuringPush(env.planPath);
    expect(await confinementsLeft(admin)).toHaveLength(2);
    const { stdout } = await baton(['revoke', '--plan', env.planPath, '-o', 'json']);
    expect(JSON.parse(stdout)).toMatchObject([{ deleted: 8 }]);
    expect(await confinementsLeft(admin)).toEqual([]);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
  });
});

describe('the handoff lock held by another host', () => {
  // A fleet shard's replacement pod has a new hostname, and pid 1 in one pod says nothing about pid 1 in another:
  // only a holder known gone (its pod terminated) or expiry frees the lock.
  const NS = 'lock-hosts';
  const holder = (host: string, runId: string) => ({ runId, user: 'test', host, pid: 1 });
  const acquire = (host: string, runId: string, isHolderGone?: (h: LockHolder) => Promise<boolean>) =>
    acquireHandoffLock(adminClients(bed.cluster.kubeconfigPath), {
      namespace: NS,
      holder: holder(host, runId),
      durationSeconds: 600,
      now: () => new Date(),
      isPidAlive: () => true,
      ...(isHolderGone ? { isHolderGone } : {}),
    });

  it('is refused while that holder may live, and taken over once it is known gone', async () => {
    const { cluster } = bed;
    await adminClients(cluster.kubeconfigPath).core.createNamespace({ body: { metadata: { name: NS } } });
    await acquire('shard-pod-a', 'run-a');
    const asked: string[] = [];
    await expect(acquire('shard-pod-b', 'run-b')).rejects.toBeInstanceOf(LockHeldError);
    await expect(
      acquire('shard-pod-b', 'run-b', async (h) => {
        asked.push(h.host);
        return false;
      }),
    ).rejects.toThrow(/run-a by test on shard-pod-a/);
    const lock = await acquire('shard-pod-b', 'run-b', async (h) => {
      asked.push(h.host);
      return true;
    });
    expect(asked).toEqual(['shard-pod-a', 'shard-pod-a']);
    expect(lock.tookOverFrom?.runId).toBe('run-a');
    const lease = await adminClients(cluster.kubeconfigPath).coordination.readNamespacedLease({
      namespace: NS,
      name: 'baton-handoff',
    });
    expect(JSON.parse(lease.spec?.holderIdentity ?? '{}')).toMatchObject({ runId: 'run-b', host: 'shard-pod-b' });
  });
});
