import { execFile, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FleetResult } from '@baton/fleet';
import { clientsFromKubeconfigFile, statusOf } from '@baton/kube';
import { type Cluster, startCluster } from '@baton/testenv';
import { stringify } from 'yaml';
import { startTestController, type TestController } from './gitops-controller.js';
import type { HandoffEnv } from './handoff-env.js';
import { eventually } from './kube.js';

const execFileAsync = promisify(execFile);
const TSX = ['--conditions=@baton/source', '--import', 'tsx'];
const CLI = fileURLToPath(new URL('../../packages/cli/src/main.ts', import.meta.url));

/** Starts `n` real clusters one after another (2 cores: parallel starts only slow each other down). */
export async function startClusters(n: number, prefix: string): Promise<Cluster[]> {
  const out: Cluster[] = [];
  try {
    for (let i = 0; i < n; i++) out.push(await startCluster({ name: `${prefix}-${i}`, nodes: 1 }));
  } catch (err) {
    await Promise.all(out.map((c) => c.stop()));
    throw err;
  }
  return out;
}

/** The test controller of each cluster (the pull side), started and stopped one by one. */
export class Controllers {
  readonly #running = new Map<string, TestController>();
  readonly #env: HandoffEnv;
  readonly #clusters: readonly Cluster[];

  constructor(env: HandoffEnv, clusters: readonly Cluster[]) {
    this.#env = env;
    this.#clusters = clusters;
  }

  start(name: string): void {
    if (this.#running.has(name)) return;
    const c = this.#clusters.find((x) => x.name === name)!;
    const p = this.#env.loaded.plan;
    this.#running.set(
      name,
      startTestController({
        kubeconfigPath: c.kubeconfigPath,
        repoUrl: this.#env.repoUrl,
        credentials: this.#env.git.credentials,
        path: 'controller',
        namespace: p.controller.namespace,
        serviceAccount: p.controller.serviceAccount,
        deployment: p.controller.name,
        statusName: p.controller.status.name,
        // Each reconcile clones the repository: 8 of them every second would load the machine for nothing.
        intervalMs: 2000,
      }),
    );
  }

  async stop(name: string): Promise<void> {
    await this.#running.get(name)?.stop();
    this.#running.delete(name);
  }

  /** Stops and starts it again: after a reset its ServiceAccount is new, and the old token no longer works. */
  async restart(name: string): Promise<void> {
    await this.stop(name);
    this.start(name);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((n) => this.stop(n)));
  }
}

/** Options of {@link writeFleetFile}. */
export interface FleetFileOptions {
  readonly template: string;
  readonly clusters: readonly { readonly name: string; readonly kubeconfigPath: string }[];
  readonly waves: readonly Record<string, unknown>[];
  readonly concurrency: number;
  readonly failureBudget: number | string;
  readonly retries?: number;
  readonly overrides?: Readonly<Record<string, Record<string, unknown>>>;
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** Writes a fleet file whose defaults are a handoff plan file. */
export function writeFleetFile(path: string, o: FleetFileOptions): string {
  writeFileSync(
    path,
    stringify(
      {
        apiVersion: 'baton.dev/v1alpha1',
        kind: 'Fleet',
        defaults: o.template,
        clusters: o.clusters.map((c) => ({
          name: c.name,
          kubeconfig: c.kubeconfigPath,
          ...(o.overrides?.[c.name] ? { overrides: o.overrides[c.name] } : {}),
        })),
        waves: o.waves,
        concurrency: o.concurrency,
        failureBudget: o.failureBudget,
        retries: o.retries ?? 0,
        ...o.extra,
      },
      { version: '1.1' },
    ),
  );
  return path;
}

/** `baton fleet up` as a user runs it: exit code, stdout (JSON with -o json), stderr. */
export async function fleetUp(args: readonly string[]): Promise<{
  code: number;
  stdout: string;
  stderr: string;
  result: FleetResult & { fleetRunId: string };
}> {
  const r = await execFileAsync(process.execPath, [...TSX, CLI, 'fleet', 'up', ...args, '-o', 'json'], {
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    (x) => ({ code: 0, stdout: x.stdout, stderr: x.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
  let result: FleetResult & { fleetRunId: string };
  try {
    result = JSON.parse(r.stdout) as typeof result;
  } catch {
    throw new Error(`baton fleet up printed no JSON (exit ${r.code}):\n${r.stderr.slice(-4000)}`);
  }
  return { ...r, result };
}

/** Spawns `baton fleet up` in its own process (to kill it with SIGKILL). */
export function spawnFleetUp(args: readonly string[]) {
  return spawn(process.execPath, [...TSX, CLI, 'fleet', 'up', ...args, '-o', 'json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Makes a handed-off (or half handed-off) test cluster new again: deletes the controller's and baton's namespaces
 * and the profile's cluster-wide RBAC, and waits until the namespaces are gone.
 */
export async function resetCluster(kubeconfigPath: string, namespaces: readonly string[]): Promise<void> {
  const k = clientsFromKubeconfigFile(kubeconfigPath);
  const ignore404 = (err: unknown) => {
    if (statusOf(err) !== 404) throw err;
  };
  for (const name of namespaces) await k.core.deleteNamespace({ name }).catch(ignore404);
  await k.rbac.deleteClusterRoleBinding({ name: 'gitops-controller' }).catch(ignore404);
  await k.rbac.deleteClusterRole({ name: 'gitops-controller' }).catch(ignore404);
  await eventually(
    async () => {
      for (const name of namespaces) {
        const gone = await k.core.readNamespace({ name }).then(
          () => false,
          (err: unknown) => statusOf(err) === 404,
        );
        if (!gone) return false;
      }
      return true;
    },
    120_000,
    `namespaces ${namespaces.join(', ')} deleted`,
    500,
  );
}

/** Removes the local step journals (a reset cluster starts a new history). */
export function clearJournals(dir: string): void {
  rmSync(join(dir), { recursive: true, force: true });
}
