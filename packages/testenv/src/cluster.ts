// Starting and stopping one cluster: the options, the handle a caller gets, and the start that ties together the
// data directory (./cluster-dir.ts), the components (./cluster-components.ts), the control plane's boot
// (./control-plane-boot.ts) and the real node (./node/).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { processStartTime } from '@baton/audit';
import { ConfigError, ProcessError } from '@baton/errors';
import { KubeRestClient } from '@baton/kube/rest';
import { ClusterComponents } from './cluster-components.js';
import { claimClusterDir, clustersDir, prepareClusterDir } from './cluster-dir.js';
import type { ClusterLayout } from './component-args.js';
import {
  CONTROL_PLANE_VERSIONS,
  type ControlPlaneBinaries,
  ensureControlPlaneBinaries,
} from './control-plane-binaries.js';
import { type Boot, bootControlPlane, startApiserver } from './control-plane-boot.js';
import { keepFailedStartLogs } from './failed-start-logs.js';
import { signalGroup } from './managed-process.js';
import { type BedNetwork, createBedNetwork, removeBedNetwork } from './node/bed-network.js';
import {
  ensureNodeBinaries,
  NODE_KUBERNETES_VERSIONS,
  type NodeBinaries,
  nodeVersionFor,
} from './node/node-binaries.js';
import { type RealNode, startRealNode, teardownRealNode } from './node/real-node.js';
import { type ClusterPki, createClusterPki } from './pki.js';
import { type RealNodeInfo, realNodeInfo } from './real-node-info.js';

/** Options of {@link startCluster}. */
export interface StartClusterOptions {
  /** Cluster name: lowercase letters, digits and '-'. @default `baton-<random>` */
  readonly name?: string;
  /** Number of kwok fake nodes (with `node: 'kwok'`). @default 1 */
  readonly nodes?: number;
  /**
   * `real`: one real node (kubelet, containerd, runc, CNI, kube-proxy, CoreDNS) and the whole bed inside a network
   * namespace of its own, reached at the node address; `kwok`: fake nodes on loopback, for tests that need many
   * nodes, or no Pod ever running (say why where it is chosen). @default 'real'
   */
  readonly node?: 'kwok' | 'real';
  /** Write the apiserver audit log (Metadata level for every request). @default true */
  readonly auditLog?: boolean;
  /** Keep the data directory after stop (for inspection). @default false */
  readonly keep?: boolean;
  /** Parent of the cluster's data directory. @default `${cacheRoot()}/testenv/clusters` */
  readonly baseDir?: string;
  /**
   * Process whose death stops the cluster (a watchdog reaps it). `null`: the cluster outlives its
   * starter and runs until `baton testenv down`. @default process.pid
   */
  readonly ownerPid?: number | null;
  /** Deadline for the whole start. @default 120000 */
  readonly startTimeoutMs?: number;
  /** Progress lines for a terminal. */
  readonly onProgress?: (line: string) => void;
  readonly signal?: AbortSignal;
  /** Prebuilt binaries (tests share one set). @default ensureControlPlaneBinaries({ kubernetesVersion }) */
  readonly binaries?: ControlPlaneBinaries;
  /**
   * Kubernetes version of the control plane (`1.35.4`), built and cached on first use; ignored with `binaries`.
   * @default `BATON_KUBERNETES_VERSION`, else `CONTROL_PLANE_VERSIONS.kubernetes`
   */
  readonly kubernetesVersion?: string;
}

/** A running local control plane. */
export interface Cluster {
  readonly name: string;
  /** Admin kubeconfig (O=system:masters client certificate). */
  readonly kubeconfigPath: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Kubernetes version of the control plane, `v1.MINOR.PATCH`. */
  readonly kubernetesVersion: string;
  /** Base64 PEM of the cluster CA, as in a kubeconfig's `certificate-authority-data`. */
  readonly caData: string;
  /** JSON-lines apiserver audit log (null when disabled). */
  readonly auditLogPath: string | null;
  /** Data directory (certificates, etcd data, logs). */
  readonly dir: string;
  /** Process ids by component. */
  readonly pids: Readonly<Record<string, number>>;
  /** Stops every component, reaps them and removes the data directory (unless kept). Idempotent. */
  stop(): Promise<void>;
  /** Restarts kube-apiserver on the same port and data (etcd keeps the objects). */
  restartApiserver(): Promise<void>;
  /** The real node, when the cluster has one. */
  readonly realNode: RealNodeInfo | null;
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;
const running = new Set<Cluster>();

/**
 * Starts a real control plane on loopback: etcd, kube-apiserver (TLS, RBAC, ServiceAccount tokens, audit log),
 * kube-controller-manager, kube-scheduler and kwok with `nodes` fake nodes, and waits until a Deployment
 * could become Available (nodes Ready, default ServiceAccount present). Every component runs in its own
 * process group; a watchdog stops them if the owner process dies.
 * @throws ConfigError for a bad name or one already in use; ProcessError when a component exits during
 *   start; TimeoutError naming what did not become ready.
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<Cluster> {
  // A port found free can still be taken by another process before a component binds it: start again
  // with fresh ports rather than fail (every component of the failed attempt is already reaped).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options);
    } catch (err) {
      const portClash = err instanceof ProcessError && /address already in use/.test(err.message);
      if (!portClash || attempt >= 3) throw err;
      options.onProgress?.(`port clash during start (attempt ${attempt}); retrying with fresh ports`);
    }
  }
}

async function startClusterOnce(options: StartClusterOptions): Promise<Cluster> {
  const { name, nodes, real } = validateStartOptions(options);
  const progress = options.onProgress ?? (() => {});
  const deadline = startDeadline(options.startTimeoutMs ?? 120_000, options.signal);
  const version = options.kubernetesVersion ? { kubernetesVersion: options.kubernetesVersion } : {};
  const bin = options.binaries ?? (await ensureControlPlaneBinaries({ onProgress: progress, ...version }));
  const nodeVersion = nodeVersionFor(bin.kubernetesVersion);
  if (real && !nodeVersion)
    throw new ConfigError(
      `node: 'real' on Kubernetes ${bin.kubernetesVersion}: the test bed builds kubelet only for ${NODE_KUBERNETES_VERSIONS.join(', ')}; use one of those versions`,
    );
  const nodeBin =
    real && nodeVersion ? await ensureNodeBinaries({ onProgress: progress, kubernetesVersion: nodeVersion }) : null;
  const base = options.baseDir ?? clustersDir();
  await claimClusterDir(base, name);
  const ownerPid = options.ownerPid === undefined ? process.pid : options.ownerPid;
  // The watchdog from the claim on: the bed's namespace, made next, would outlive an owner killed before the first
  // state.json otherwise (the namespace is recorded in network.json before it exists).
  const reaper = ownerPid === null ? null : startReaper(ownerPid, join(base, name));
  let net: BedNetwork | null = null;
  let layout: ClusterLayout;
  let pki: ClusterPki;
  try {
    if (nodeBin) net = await createBedNetwork(name, join(base, name, 'network.json'));
    pki = await createClusterPki(net ? { nodeIp: net.nodeIp, nodeName: `${name}-node-0` } : {});
    layout = await prepareClusterDir(join(base, name), name, pki, options.auditLog !== false, net, !!net);
  } catch (err) {
    if (net) await removeBedNetwork(net.name, net.hostLink);
    reaper?.kill();
    throw err;
  }

  const components = new ClusterComponents(layout, net, {
    name,
    server: layout.server,
    kubeconfigPath: layout.kubeconfigs.admin,
    auditLogPath: layout.auditLogPath,
    dir: layout.dir,
    ownerPid,
    hostPid: process.pid,
    ...hostStart(),
    keep: options.keep ?? false,
    startedAt: new Date().toISOString(),
    versions: { ...CONTROL_PLANE_VERSIONS, kubernetes: bin.kubernetesVersion },
    ...(net ? { netns: net.name } : {}),
  });
  await components.saveState();
  // The few raw calls the bed makes itself (readiness, node registration), as the admin, each within 5 s.
  const http = new KubeRestClient(
    {
      server: layout.server,
      caPem: pki.ca.certPem,
      certPem: pki.admin.certPem,
      keyPem: pki.admin.keyPem,
      requestTimeoutMs: 5_000,
    },
    4,
  );
  const boot: Boot = { layout, bin, components, http, ...deadline };
  const node: NodeBoot | null = nodeBin && net ? { bin: nodeBin, net, pki, started: undefined } : null;
  const cluster = clusterHandle(boot, pki.ca.certPem, node, {
    keep: options.keep ?? false,
    reaper,
    callerSignal: options.signal,
  });
  running.add(cluster);
  try {
    await bootControlPlane(boot, node ? null : nodes, progress);
    if (node) {
      node.started = await startRealNode({
        clusterName: name,
        clusterDir: layout.dir,
        pkiDir: layout.pkiDir,
        pki,
        net: node.net,
        server: layout.server,
        http,
        bin: node.bin,
        start: (c, command, args) => components.start(c, command, args),
        track: (n, pid) => components.track(n, pid),
        guard: components.guard,
        signal: boot.signal,
        remaining: boot.remaining,
        logDir: layout.logDir,
      });
      progress(`node ${node.started.nodeName} Ready ${node.started.readySeconds} s after kubelet started`);
    }
    return cluster;
  } catch (err) {
    await keepFailedStartLogs(err, layout.logDir, base, name);
    await cluster.stop().catch(() => {});
    throw err;
  }
}

/** @throws ConfigError for a name or node count out of range. */
function validateStartOptions(options: StartClusterOptions): { name: string; nodes: number; real: boolean } {
  const name = options.name ?? `baton-${randomBytes(3).toString('hex')}`;
  if (!NAME_RE.test(name)) {
    throw new ConfigError(
      `cluster name "${name}" is invalid: use 1-40 lowercase letters, digits and '-', starting and ending with a letter or digit`,
    );
  }
  const nodes = options.nodes ?? 1;
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 100) {
    throw new ConfigError(`--nodes ${nodes} is invalid: use a whole number from 0 to 100`);
  }
  const real = (options.node ?? 'real') === 'real';
  if (real && nodes !== 1) {
    throw new ConfigError(
      `--nodes ${nodes} counts kwok fake nodes, and a cluster with a real node has exactly one: add --node kwok (node: 'kwok') for ${nodes} fake nodes, or drop --nodes`,
    );
  }
  return { name, nodes, real };
}

/** The start's deadline: `remaining()` bounds each wait, and the signal (10 s later) cuts a hung one. */
function startDeadline(timeoutMs: number, caller: AbortSignal | undefined) {
  const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs + 10_000), ...(caller ? [caller] : [])]);
  const deadline = performance.now() + timeoutMs;
  return { signal, remaining: () => Math.max(1_000, deadline - performance.now()) };
}

/** A real node's part of the start: its binaries, its namespace, and once started, the node. */
interface NodeBoot {
  readonly bin: NodeBinaries;
  readonly net: BedNetwork;
  readonly pki: ClusterPki;
  started: RealNode | undefined;
}

/** The handle a caller gets; `stop` also undoes a failed start. */
function clusterHandle(
  boot: Boot,
  caPem: string,
  node: NodeBoot | null,
  options: { readonly keep: boolean; readonly reaper: Reaper | null; readonly callerSignal: AbortSignal | undefined },
): Cluster {
  const { layout, components, http } = boot;
  const { keep, reaper } = options;
  const restartSignal = AbortSignal.any(options.callerSignal ? [options.callerSignal] : []);
  const cluster: Cluster = {
    name: layout.name,
    kubeconfigPath: layout.kubeconfigs.admin,
    server: layout.server,
    kubernetesVersion: boot.bin.kubernetesVersion,
    caData: Buffer.from(caPem).toString('base64'),
    auditLogPath: layout.auditLogPath,
    dir: layout.dir,
    get pids() {
      return components.pids;
    },
    get realNode(): RealNodeInfo | null {
      const started = node?.started;
      if (!node || !started) return null;
      return realNodeInfo({
        nodeName: started.nodeName,
        nodeIp: node.net.nodeIp,
        netns: node.net.name,
        registryHost: started.registry.host,
        readySeconds: started.readySeconds,
        runDir: started.runDir,
      });
    },
    stop: async () => {
      running.delete(cluster);
      http.close();
      await components.stopAll();
      if (node) {
        await node.started?.registry.stop();
        // The containers, their mounts and cgroups, and the namespace: what stopping the processes leaves.
        await teardownRealNode(layout.dir);
        await removeBedNetwork(node.net.name, node.net.hostLink);
      }
      reaper?.kill();
      if (!keep) await rm(layout.dir, { recursive: true, force: true });
      else await components.saveState();
    },
    restartApiserver: async () => {
      await components.stop('kube-apiserver');
      // Its own deadline: the start's signal has long timed out on a cluster that ran for minutes.
      await startApiserver({ ...boot, signal: restartSignal }, 60_000);
    },
  };
  return cluster;
}

/** The watchdog process that stops the cluster when its owner dies. */
interface Reaper {
  kill(): void;
}

/** This process's start time, recorded beside its pid. */
function hostStart(): { hostStart?: string } {
  const { start } = processStartTime(process.pid);
  return start === undefined ? {} : { hostStart: start };
}

function startReaper(ownerPid: number, dir: string): Reaper {
  const script = new URL('../bin/reaper.mjs', import.meta.url).pathname;
  const child = spawn(process.execPath, [script, String(ownerPid), dir], { detached: true, stdio: 'ignore' });
  child.unref();
  return {
    kill: () => {
      if (child.pid) signalGroup(child.pid, 'SIGTERM');
    },
  };
}

/** Stops every cluster this process started. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}
