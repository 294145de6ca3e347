// Clusters as recorded on disk, from any process: what `baton testenv ls` lists and `baton testenv down` stops.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, isSameProcess } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { type ClusterState, clustersDir, readState } from './cluster-dir.js';
import { signalGroup } from './managed-process.js';
import { teardownRealNode } from './node/real-node.js';
import { pollUntil } from './poll.js';

/** Clusters recorded on disk (running or left over), with whether their host process is alive. */
export async function listClusters(
  baseDir = clustersDir(),
): Promise<(ClusterState & { readonly isRunning: boolean })[]> {
  const names = await readdir(baseDir).catch(() => [] as string[]);
  const out: (ClusterState & { isRunning: boolean })[] = [];
  for (const n of names.sort()) {
    const s = await readState(join(baseDir, n));
    if (s) out.push({ ...s, isRunning: isSameProcess(s.hostPid, s.hostStart) && anyRecordedAlive(s) });
  }
  return out;
}

/**
 * Stops a cluster by name from any process: its host first (which stops the components cleanly), then
 * any component group still alive, then removes the data directory unless the cluster was started to keep it.
 * @throws ConfigError when no cluster of that name is recorded.
 */
export async function stopClusterByName(name: string, baseDir = clustersDir()): Promise<void> {
  const dir = join(baseDir, name);
  const s = await readState(dir);
  if (!s)
    throw new ConfigError(`no cluster named "${name}" is recorded under ${baseDir}; \`baton testenv ls\` lists them`);
  if (s.hostPid !== process.pid && isSameProcess(s.hostPid, s.hostStart)) {
    try {
      process.kill(s.hostPid, 'SIGTERM');
    } catch {}
    await pollUntil(async () => (isProcessAlive(s.hostPid) ? undefined : true), {
      timeoutMs: 15_000,
      what: `the host process ${s.hostPid} of cluster "${name}" to exit`,
    }).catch(() => {});
  }
  const groups = ownGroups(s);
  for (const pid of groups) signalGroup(pid, 'SIGTERM');
  await pollUntil(async () => (anyRecordedAlive(s) ? undefined : true), {
    timeoutMs: 10_000,
    what: `cluster "${name}" to stop`,
  }).catch(() => {
    for (const pid of groups) signalGroup(pid, 'SIGKILL');
  });
  await teardownRealNode(dir);
  // `testenv up --keep`: the data directory (component logs, the audit log, etcd's data) stays for a look afterwards.
  if (!s.keep) await rm(dir, { recursive: true, force: true });
}

/** Whether any recorded component process still runs as recorded. */
function anyRecordedAlive(s: ClusterState): boolean {
  return Object.entries(s.pids).some(([name, pid]) => isSameProcess(pid, s.starts?.[name]));
}

/**
 * The process groups `down` may signal: every recorded one, except a pid now held by a newer process (a kept or
 * left-over cluster's pids are days old). A dead leader's group is still signalled: its children may outlive it, and
 * the kernel reuses no pid while its group lives.
 */
function ownGroups(s: ClusterState): number[] {
  return Object.entries(s.pids)
    .filter(([name, pid]) => !isProcessAlive(pid) || isSameProcess(pid, s.starts?.[name]))
    .map(([, pid]) => pid);
}
