// A bed: a real local cluster (in this process or detached) and a controller side on it, stopped together.

import {
  type BatonControllerSide,
  type StartBatonControllerSideOptions,
  startBatonControllerSide,
} from './baton-controller-side.js';
import { startCluster } from './cluster.js';
import { startDetachedCluster } from './detached.js';
import { requireRealNode } from './gitops-side.js';
import { type RealNodeInfo, realNodeInfo } from './real-node-info.js';
import { stopClusterByName } from './recorded-clusters.js';

/** Options of {@link startHandoffBed}. */
export interface StartHandoffBedOptions
  extends StartBedClusterOptions,
    Omit<StartBatonControllerSideOptions, 'kubeconfigPath' | 'clusterName' | 'realNode'> {}

/** A fresh local cluster with a controller side ({@link BatonControllerSide} by default): what a handoff needs. */
export interface HandoffBed<
  S extends { stop(options?: { readonly keepFiles?: boolean }): Promise<void> } = BatonControllerSide,
> {
  readonly clusterName: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly apiserverAuditLogPath: string | null;
  /** The bed's real node (its containers' processes can be read from /proc); null on kwok nodes or held by a host. */
  readonly realNode: RealNodeInfo | null;
  readonly side: S;
  /**
   * Stops the Git server; stops the cluster unless `keepCluster`; removes the side's files
   * unless `keepFiles` (default: kept when the cluster is).
   */
  stop(options?: { readonly keepCluster?: boolean; readonly keepFiles?: boolean }): Promise<void>;
}

/** Options of {@link startBedCluster}. */
export interface StartBedClusterOptions {
  /** Cluster name. @default a generated one */
  readonly name?: string;
  /** @default 1 */
  readonly nodes?: number;
  /**
   * Run the cluster, and its node, in a background host that outlives this process (`pnpm baton testenv down` stops
   * it); the side still runs here and reaches the node by its coordinates. @default false
   */
  readonly detached?: boolean;
  /** Kubernetes version (`1.35.4`). @default `BATON_KUBERNETES_VERSION`, else `CONTROL_PLANE_VERSIONS.kubernetes` */
  readonly kubernetesVersion?: string;
  /**
   * `real`: one real node in the bed's own network namespace (see `startCluster`); `kwok` only for a cluster with no
   * controller side (a side refuses it). @default 'real'
   */
  readonly node?: 'kwok' | 'real';
}

/** A local cluster, in this process or detached, with one way to stop it. */
export interface BedCluster {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath: string | null;
  /** The real node, when the cluster has one. */
  readonly realNode: RealNodeInfo | null;
  stop(): Promise<void>;
}

/**
 * Starts a real local cluster in this process ({@link startCluster}) or in a detached host ({@link startDetachedCluster}).
 * @throws when a component does not become ready.
 */
export async function startBedCluster(o: StartBedClusterOptions = {}): Promise<BedCluster> {
  const common = {
    ...(o.name ? { name: o.name } : {}),
    ...(o.kubernetesVersion ? { kubernetesVersion: o.kubernetesVersion } : {}),
    nodes: o.nodes ?? 1,
  };
  if (o.detached) {
    // The host owns the cluster and its node; the side runs in this process and reaches the node by its coordinates.
    const c = await startDetachedCluster({ ...common, keep: true, ...(o.node ? { node: o.node } : {}) });
    return {
      name: c.name,
      server: c.server,
      kubeconfigPath: c.kubeconfigPath,
      auditLogPath: c.auditLogPath,
      realNode: c.realNode ? realNodeInfo(c.realNode) : null,
      stop: async () => {
        await stopClusterByName(c.name);
      },
    };
  }
  const c = await startCluster({ ...common, ...(o.node ? { node: o.node } : {}) });
  return {
    name: c.name,
    server: c.server,
    kubeconfigPath: c.kubeconfigPath,
    auditLogPath: c.auditLogPath,
    realNode: c.realNode,
    stop: () => c.stop(),
  };
}

/**
 * Starts a real local cluster ({@link startBedCluster}) and {@link startBatonControllerSide} for it.
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export function startHandoffBed(o: StartHandoffBedOptions): Promise<HandoffBed> {
  const { name, nodes, detached, kubernetesVersion, node, ...sideOptions } = o;
  return startBedWith({ name, nodes, detached, kubernetesVersion, node: node ?? 'real' }, (cluster) =>
    startBatonControllerSide({
      ...sideOptions,
      kubeconfigPath: cluster.kubeconfigPath,
      clusterName: cluster.name,
      realNode: cluster.realNode,
    }),
  );
}

/**
 * Starts a real local cluster and a controller side for it (`startSide`).
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export async function startBedWith<S extends { stop(options?: { readonly keepFiles?: boolean }): Promise<void> }>(
  o: { readonly [K in keyof StartBedClusterOptions]?: StartBedClusterOptions[K] | undefined },
  startSide: (cluster: BedCluster) => Promise<S>,
): Promise<HandoffBed<S>> {
  if (o.node === 'kwok') requireRealNode(null, 'a handoff bed');
  const cluster = await startBedCluster({
    ...(o.name ? { name: o.name } : {}),
    ...(o.nodes ? { nodes: o.nodes } : {}),
    ...(o.detached ? { detached: o.detached } : {}),
    ...(o.kubernetesVersion ? { kubernetesVersion: o.kubernetesVersion } : {}),
    ...(o.node ? { node: o.node } : {}),
  });
  let side: S;
  try {
    side = await startSide(cluster);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return {
    clusterName: cluster.name,
    server: cluster.server,
    kubeconfigPath: cluster.kubeconfigPath,
    apiserverAuditLogPath: cluster.auditLogPath,
    realNode: cluster.realNode,
    side,
    async stop(options = {}) {
      await side.stop({ keepFiles: options.keepFiles ?? options.keepCluster === true });
      if (!options.keepCluster) await cluster.stop();
    },
  };
}
