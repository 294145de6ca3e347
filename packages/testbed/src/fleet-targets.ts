import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clientsFromKubeconfigFile, statusOf } from '@baton/kube';
import { type Cluster, pollUntil, startCluster } from '@baton/testenv';
import { parse, stringify } from 'yaml';
import { type BatonControllerEnv, createBatonControllerEnv } from './baton-controller-env.js';

/** A fleet target with a real node: baton-controller's Pod runs there, pulling from its own Git server in the bed. */
export interface RealFleetTarget {
  readonly cluster: Cluster;
  /** Its handoff side: the profile in a Git repository served in the bed, the pinned image in the bed's registry. */
  readonly side: BatonControllerEnv;
}

/**
 * Starts `n` real clusters with a real node each (one after another: on 2 cores parallel starts only slow each other
 * down), each with baton-controller's side. Beds have no route to each other, so each serves its own Git repository.
 */
export async function startRealFleetTargets(
  n: number,
  prefix: string,
  o: {
    /** Each side's files go in `<sidesDir>/<cluster>` (a shard image carries them: not under /tmp). */
    readonly sidesDir?: string;
    /** Called once each cluster is up, before its side starts (e.g. to link it to a management bed). */
    readonly onCluster?: (c: Cluster) => Promise<void>;
  } = {},
): Promise<RealFleetTarget[]> {
  const out: RealFleetTarget[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const cluster = await startCluster({ name: `${prefix}-${i}`, node: 'real' });
      try {
        await o.onCluster?.(cluster);
        const side = await createBatonControllerEnv({
          kubeconfigPath: cluster.kubeconfigPath,
          clusterName: cluster.name,
          realNode: cluster.realNode,
          ...(o.sidesDir ? { dir: join(o.sidesDir, cluster.name) } : {}),
        });
        out.push({ cluster, side });
      } catch (err) {
        await cluster.stop();
        throw err;
      }
    }
  } catch (err) {
    await stopRealFleetTargets(out);
    throw err;
  }
  return out;
}

export async function stopRealFleetTargets(targets: readonly RealFleetTarget[]): Promise<void> {
  await Promise.all(
    targets.map(async (t) => {
      await t.side.stop();
      await t.cluster.stop();
    }),
  );
}

/**
 * What differs between one target's plan and another's: where its controller pulls from (its bed's Git server, its
 * commit, its pull credential), its push-only Secret files and where its images' signatures are read (its bed's
 * registry, the bed's trusted-keys file), as the plan loader resolved them (absolute paths: a
 * fleet file's relative paths would resolve against the template's folder). Audit and journal stay the template's:
 * a fleet has one log.
 */
export function targetOverrides(side: BatonControllerEnv): Record<string, unknown> {
  const { push, pull } = side.loaded.plan;
  return {
    push: {
      manifests: push.manifests,
      secrets: push.secrets.map((s) => ({ name: s.name, fromFile: s.fromFile })),
      // Its images are verified in its own bed's registry, with the bed's key file.
      images: push.images,
    },
    pull: { credential: { fromFile: pull.credential.fromFile }, source: pull.source },
  };
}

/**
 * Writes the fleet's defaults: `side`'s plan with a longer takeover (several handoffs share 2 cores beside a real
 * node each), next to it so its relative paths still resolve. Returns its path.
 */
export function writeFleetTemplate(side: BatonControllerEnv, takeoverSeconds: number): string {
  const plan = parse(readFileSync(side.planPath, 'utf8')) as Record<string, Record<string, unknown>>;
  const path = join(side.dir, 'fleet-template.yaml');
  writeFileSync(path, stringify({ ...plan, takeover: { ...plan.takeover, timeoutSeconds: takeoverSeconds } }));
  return path;
}

/**
 * Holds a real node's Pods back (cordon: the controller's Pod stays Pending, so the takeover waits) or lets them
 * run again (uncordon).
 */
export async function setSchedulable(cluster: Cluster, schedulable: boolean): Promise<void> {
  const k = clientsFromKubeconfigFile(cluster.kubeconfigPath);
  const name = cluster.realNode?.nodeName;
  if (!name) throw new Error(`${cluster.name} has no real node to cordon`);
  for (;;) {
    const node = await k.core.readNode({ name });
    node.spec = { ...node.spec, unschedulable: !schedulable };
    try {
      await k.core.replaceNode({ name, body: node });
      return;
    } catch (err) {
      if (statusOf(err) !== 409) throw err; // the kubelet updated it meanwhile: read it again
    }
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

/**
 * Deletes namespaces and waits until they are gone (404): how a handed-off (or half handed-off) test cluster is made
 * new again between cases, its controller's and baton's namespaces removed. Cluster-wide objects stay: the next push
 * applies them again.
 */
export async function deleteNamespacesAndWait(
  kubeconfigPath: string,
  namespaces: readonly string[],
  timeoutMs = 120_000,
): Promise<void> {
  const k = clientsFromKubeconfigFile(kubeconfigPath);
  // Gone already (404), or already being deleted (409 while it terminates): either way, wait for it below.
  const ignoreGone = (err: unknown) => {
    if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
  };
  for (const name of namespaces) await k.core.deleteNamespace({ name }).catch(ignoreGone);
  await pollUntil(
    async () => {
      for (const name of namespaces) {
        const gone = await k.core.readNamespace({ name }).then(
          () => false,
          (err: unknown) => statusOf(err) === 404,
        );
        if (!gone) return undefined;
      }
      return true;
    },
    { timeoutMs, intervalMs: 500, what: `namespaces ${namespaces.join(', ')} to be deleted` },
  );
}
