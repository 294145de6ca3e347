import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive, processStartTime } from '@baton/audit';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import type { ClusterState } from './cluster-dir.js';
import { listClusters, stopClusterByName } from './recorded-clusters.js';

const tempDir = useTempDirs();
// pid 2^22+1 is above Linux's pid_max default: certainly not running.
const DEAD = 4_194_305;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A live process in its own group, standing for whatever now holds a recorded pid. */
function bystander(): number {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  children.push(child);
  return child.pid!;
}

async function record(base: string, name: string, etcd: number, etcdStart: string): Promise<string> {
  const dir = join(base, name);
  await mkdir(dir, { recursive: true });
  const state: ClusterState = {
    name,
    server: 'https://127.0.0.1:1',
    kubeconfigPath: join(dir, 'kubeconfig'),
    auditLogPath: null,
    dir,
    ownerPid: null,
    hostPid: DEAD,
    hostStart: '1',
    keep: false,
    startedAt: '2026-12-07T00:00:00.000Z',
    pids: { etcd },
    starts: { etcd: etcdStart },
    versions: {},
  };
  await writeFile(join(dir, 'state.json'), JSON.stringify(state));
  return dir;
}

describe('recorded clusters and reused pids', () => {
  it('`down` never signals a process that took over a recorded pid, and still removes the record', async () => {
    const base = tempDir('clusters-');
    const pid = bystander();
    const start = processStartTime(pid).start!;
    const dir = await record(base, 'old', pid, `${BigInt(start) - 1n}`);

    expect((await listClusters(base)).map((c) => [c.name, c.isRunning])).toEqual([['old', false]]);
    await stopClusterByName('old', base);
    expect(isProcessAlive(pid)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('`down` stops a recorded process that is still the one recorded', async () => {
    const base = tempDir('clusters-');
    const pid = bystander();
    await record(base, 'live', pid, processStartTime(pid).start!);

    expect((await listClusters(base)).map((c) => [c.name, c.isRunning])).toEqual([['live', false]]);
    await stopClusterByName('live', base);
    expect(isProcessAlive(pid)).toBe(false);
  });
});
