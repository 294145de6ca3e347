import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, ProcessError } from '@baton/errors';
import { ensureControlPlaneBinaries, listClusters, startCluster } from '@baton/testenv';
import { describe, expect, it } from 'vitest';
import { adminClients, eventually, statusOfCall } from '../../support/kube.js';
import { useTempDirs } from '../../support/temp-dirs.js';

const tempDir = useTempDirs();

// Unique per test process: cluster names share one directory with any other run on this machine.
const ORPHAN = `orphan-check-${process.pid}`;
const BROKEN = `broken-start-${process.pid}`;
const TWICE = `twice-${process.pid}`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// The control plane's own lifecycle (processes, data directory, names): kwok, so that no node's start is in the way;
// the real node's teardown has its own tests (test/integration/node).
describe('cluster lifecycle', () => {
  it('keeps objects across an apiserver restart (etcd persistence)', async () => {
    const cluster = await startCluster({ node: 'kwok', nodes: 0 });
    try {
      const admin = adminClients(cluster.kubeconfigPath);
      await admin.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: 'survivor' }, data: { k: 'v' } },
      });
      const before = cluster.pids['kube-apiserver'];
      await cluster.restartApiserver();
      expect(cluster.pids['kube-apiserver']).not.toBe(before);
      expect(alive(before!)).toBe(false);
      const cm = await admin.core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' });
      expect(cm.data).toEqual({ k: 'v' });
    } finally {
      await cluster.stop();
    }
  });

  it('runs two clusters side by side, isolated from each other, and reaps every process on stop', async () => {
    const [a, b] = await Promise.all([
      startCluster({ node: 'kwok', nodes: 1 }),
      startCluster({ node: 'kwok', nodes: 1 }),
    ]);
    const pids = [...Object.values(a.pids), ...Object.values(b.pids)];
    try {
      expect(a.server).not.toBe(b.server);
      const ca = adminClients(a.kubeconfigPath);
      const cb = adminClients(b.kubeconfigPath);
      await ca.core.createNamespace({ body: { metadata: { name: 'only-in-a' } } });
      expect(await statusOfCall(() => cb.core.readNamespace({ name: 'only-in-a' }))).toBe(404);
      expect((await cb.core.listNode()).items.map((n) => n.metadata?.name)).toEqual([`${b.name}-node-0`]);
      // A's admin certificate is signed by A's CA only: B must reject it.
      const crossed = adminClients(a.kubeconfigPath);
      crossed.kc.clusters[0] = { ...crossed.kc.clusters[0]!, server: b.server, caData: b.caData };
      const cross = crossed.kc.makeApiClient((await import('@kubernetes/client-node')).CoreV1Api);
      expect(await statusOfCall(() => cross.listNamespace())).toBe(401);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(a.dir)).toBe(false);
    expect(existsSync(b.dir)).toBe(false);
  });

  it('reaps the components when the owning process is killed with SIGKILL', async () => {
    const script = `
      import { startCluster } from '@baton/testenv';
      const c = await startCluster({ node: 'kwok', nodes: 0, name: '${ORPHAN}' });
      process.stdout.write(JSON.stringify(c.pids) + '\\n');
      setInterval(() => {}, 1 << 30);
    `;
    const child = spawn(
      process.execPath,
      ['--conditions=@baton/source', '--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const pids = await new Promise<Record<string, number>>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(JSON.parse(String(d))));
      child.once('exit', (code) => reject(new Error(`owner exited early with ${code}`)));
    });
    // Killed before any assertion: a failed one must not leave the owner (and so its cluster) running.
    child.kill('SIGKILL');
    expect(Object.keys(pids).sort()).toEqual([
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
      'kwok',
    ]);
    await eventually(
      async () => Object.values(pids).every((p) => !alive(p)),
      15_000,
      'every component of the orphaned cluster to be gone',
    );
    await eventually(
      async () => !(await listClusters()).some((c) => c.name === ORPHAN),
      10_000,
      'the data directory to be removed',
    );
  });

  it("refuses to start a second cluster under a running one's name, and leaves the running one intact", async () => {
    const first = await startCluster({ node: 'kwok', nodes: 0, name: TWICE });
    try {
      const err = await startCluster({ node: 'kwok', nodes: 0, name: TWICE }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(`a cluster named "${TWICE}" is already running (pid ${process.pid}`);
      expect((err as Error).message).toContain(`baton testenv down --name ${TWICE}`);
      // Its PKI and data were not touched: the admin credential still works.
      const admin = adminClients(first.kubeconfigPath);
      expect((await admin.core.readNamespace({ name: 'kube-system' })).metadata?.name).toBe('kube-system');
    } finally {
      await first.stop();
    }
  });

  it('refuses several nodes on a real-node cluster (the default), naming the option and the fix, and starts nothing', async () => {
    const name = `manynodes-${process.pid}`;
    const err = await startCluster({ nodes: 3, name }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(
      "--nodes 3 counts kwok fake nodes, and a cluster with a real node has exactly one: add --node kwok (node: 'kwok') for 3 fake nodes, or drop --nodes",
    );
    expect((await listClusters()).some((c) => c.name === name)).toBe(false);
  });

  it('fails fast, naming the component, its command and its log, when a component exits during start', async () => {
    const dir = tempDir('broken-');
    const broken = join(dir, 'kube-apiserver');
    await writeFile(broken, '#!/bin/sh\necho "E1130 bind: address already in use (simulated)" >&2\nexit 3\n');
    await chmod(broken, 0o755);
    const binaries = { ...(await ensureControlPlaneBinaries()), kubeApiserver: broken };
    const t0 = performance.now();
    const err = await startCluster({ node: 'kwok', nodes: 0, binaries, name: BROKEN }).catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(err).toBeInstanceOf(ProcessError);
    const message = (err as Error).message;
    expect(message).toMatch(/^kube-apiserver exited with code 3 during start: `.*kube-apiserver --etcd-servers=/);
    expect(message).toContain('address already in use (simulated)');
    expect(message).toMatch(/fix: /);
    // Nothing is left behind: etcd, which had started, is reaped and the data directory removed.
    expect((await listClusters()).some((c) => c.name === BROKEN)).toBe(false);
  });
});
