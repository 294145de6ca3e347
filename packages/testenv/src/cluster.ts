import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { isProcessAlive } from '@baton/audit';
import { ConfigError, ProcessError } from '@baton/errors';
import { KubeRestClient } from '@baton/kube/rest';
import {
  apiserverArgs,
  auditPolicyPath,
  type ClusterLayout,
  type ClusterPorts,
  controllerManagerArgs,
  etcdArgs,
  kwokArgs,
  schedulerArgs,
} from './component-args.js';
import {
  CONTROL_PLANE_VERSIONS,
  type ControlPlaneBinaries,
  ensureControlPlaneBinaries,
} from './control-plane-binaries.js';
import { keepFailedStartLogs } from './failed-start-logs.js';
import { withFileLock } from './file-lock.js';
import { kubeconfigYaml } from './kubeconfig.js';
import { ManagedProcess, signalGroup } from './managed-process.js';
import { type BedNetwork, createBedNetwork, removeBedNetwork, wrapInNetns } from './node/bed-network.js';
import {
  ensureNodeBinaries,
  NODE_KUBERNETES_VERSIONS,
  type NodeBinaries,
  nodeVersionFor,
} from './node/node-binaries.js';
import { containerPid, NODE_COMPONENTS, type RealNode, startRealNode, teardownRealNode } from './node/real-node.js';
import { cacheRoot } from './paths.js';
import { type CertKeyPair, type ClusterPki, createClusterPki } from './pki.js';
import { pollUntil } from './poll.js';
import { freePorts } from './ports.js';
import { pushToRegistry } from './registry.js';

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

/** Where a cluster's real node is, as plain data: what a detached host reports, from which {@link realNodeInfo} works. */
export interface RealNodeCoordinates {
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly netns: string;
  readonly registryHost: string;
  readonly readySeconds: number;
  /** containerd's state under the node's directory (for a container's host pid). */
  readonly runDir: string;
}

/**
 * A real node's handle from its coordinates, in any process of this machine (root): commands enter its namespace
 * by path, images go to its registry over HTTP, container pids come from containerd's state files.
 */
export function realNodeInfo(c: RealNodeCoordinates): RealNodeInfo {
  return {
    nodeName: c.nodeName,
    nodeIp: c.nodeIp,
    netns: c.netns,
    registryHost: c.registryHost,
    readySeconds: c.readySeconds,
    coordinates: c,
    wrap: wrapInNetns(c.netns),
    containerPid: (id) => containerPid(c.runDir, id),
    pushImage: (layoutDir, repository, ref) => pushToRegistry(c.registryHost, layoutDir, repository, ref),
  };
}

/** A cluster's real node, as its users see it. */
export interface RealNodeInfo {
  readonly nodeName: string;
  /** The node address (every component of the bed binds it). */
  readonly nodeIp: string;
  /** The bed's network namespace (`/run/netns/<netns>`). */
  readonly netns: string;
  /** `host:port` of the bed's registry, from which the node pulls (it also serves `ghcr.io/…` by digest). */
  readonly registryHost: string;
  /** kubelet start to node Ready, seconds. */
  readonly readySeconds: number;
  /** The same, as data (a detached host reports them). */
  readonly coordinates: RealNodeCoordinates;
  /** The command line that runs `command` inside the bed's namespace. */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  /** The host pid of a running container's first process (`containerd://<id>` from a Pod's status, or the id). */
  containerPid(containerId: string): number;
  /** Pushes the image `ref` of an OCI layout to the bed's registry as `repository`; returns its digest. */
  pushImage(layoutDir: string, repository: string, ref: string): Promise<string>;
}

/** What `state.json` in a cluster directory records, for `baton testenv ls/down` and the watchdog. */
export interface ClusterState {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath: string | null;
  readonly dir: string;
  readonly ownerPid: number | null;
  readonly hostPid: number;
  readonly keep: boolean;
  readonly startedAt: string;
  readonly pids: Record<string, number>;
  readonly versions: Record<string, string>;
  /** The bed's network namespace, when the cluster has a real node. */
  readonly netns?: string;
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;
/** Names the process that is starting a cluster, until its state.json exists. */
const CLAIM_FILE = 'starting.pid';
const running = new Set<Cluster>();

/** Default parent of cluster data directories. */
export function clustersDir(): string {
  return join(cacheRoot(), 'testenv', 'clusters');
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

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
  const net = nodeBin ? await createBedNetwork(name) : null;
  let layout: ClusterLayout;
  let pki: ClusterPki;
  try {
    pki = await createClusterPki(net ? { nodeIp: net.nodeIp, nodeName: `${name}-node-0` } : {});
    layout = await prepareClusterDir(join(base, name), name, pki, options.auditLog !== false, net, !!net);
  } catch (err) {
    if (net) await removeBedNetwork(net.name, net.hostLink);
    throw err;
  }

  const ownerPid = options.ownerPid === undefined ? process.pid : options.ownerPid;
  const components = new ClusterComponents(layout, net, {
    name,
    server: layout.server,
    kubeconfigPath: layout.kubeconfigs.admin,
    auditLogPath: layout.auditLogPath,
    dir: layout.dir,
    ownerPid,
    hostPid: process.pid,
    keep: options.keep ?? false,
    startedAt: new Date().toISOString(),
    versions: { ...CONTROL_PLANE_VERSIONS, kubernetes: bin.kubernetesVersion },
    ...(net ? { netns: net.name } : {}),
  });
  await components.saveState();
  const reaper = ownerPid === null ? null : startReaper(ownerPid, layout.dir);
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

/**
 * Checks that no live process holds the name and claims an empty directory for this one, under a lock: two
 * processes starting the same name at once would otherwise both wipe the directory and overwrite each other's
 * PKI. The claim covers the seconds before state.json exists.
 * @throws ConfigError when the name is in use.
 */
async function claimClusterDir(base: string, name: string): Promise<void> {
  const dir = join(base, name);
  await mkdir(base, { recursive: true });
  await withFileLock(join(base, `.${name}.lock`), async () => {
    const holder = await describeHolder(dir);
    if (holder) {
      throw new ConfigError(
        `a cluster named "${name}" is already running (${holder}); choose another --name or stop it with \`baton testenv down --name ${name}\``,
      );
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, CLAIM_FILE), String(process.pid));
  });
}

/** Who holds a cluster directory: a live host, a live starter other than us, or nobody (undefined). */
async function describeHolder(dir: string): Promise<string | undefined> {
  const prev = await readState(dir);
  if (prev && isProcessAlive(prev.hostPid)) return `pid ${prev.hostPid}, ${prev.server}`;
  const claim = Number.parseInt(await readFile(join(dir, CLAIM_FILE), 'utf8').catch(() => ''), 10);
  if (Number.isFinite(claim) && claim !== process.pid && isProcessAlive(claim)) return `being started by pid ${claim}`;
  return undefined;
}

/** Writes certificates, kubeconfigs and the audit policy into a claimed directory, on fresh ports. */
async function prepareClusterDir(
  dir: string,
  name: string,
  pki: ClusterPki,
  auditLog: boolean,
  net: ComponentNetwork | null,
  realNode: boolean,
): Promise<ClusterLayout> {
  const pkiDir = join(dir, 'pki');
  const logDir = join(dir, 'logs');
  await mkdir(pkiDir, { recursive: true });
  await mkdir(logDir, { recursive: true });
  await writeCertificates(pkiDir, pki);
  const ports = await allocatePorts();
  const host = net?.nodeIp ?? '127.0.0.1';
  const layout: ClusterLayout = {
    name,
    dir,
    pkiDir,
    logDir,
    ports,
    host,
    realNode,
    server: `https://${host}:${ports.apiserver}`,
    kubeconfigs: {
      admin: join(dir, 'kubeconfig'),
      controllerManager: join(dir, 'controller-manager.kubeconfig'),
      scheduler: join(dir, 'scheduler.kubeconfig'),
      kwok: join(dir, 'kwok.kubeconfig'),
    },
    auditLogPath: auditLog ? join(dir, 'audit.log') : null,
  };
  await writeKubeconfigs(layout, pki);
  if (layout.auditLogPath) await writeFile(auditPolicyPath(layout), AUDIT_POLICY);
  return layout;
}

async function writeCertificates(pkiDir: string, pki: ClusterPki): Promise<void> {
  const files: Record<string, string> = {
    'ca.crt': pki.ca.certPem,
    'ca.key': pki.ca.keyPem,
    'apiserver.crt': pki.apiserver.certPem,
    'apiserver.key': pki.apiserver.keyPem,
    'apiserver-kubelet-client.crt': pki.apiserverKubeletClient.certPem,
    'apiserver-kubelet-client.key': pki.apiserverKubeletClient.keyPem,
    'sa.key': pki.serviceAccount.privateKeyPem,
    'sa.pub': pki.serviceAccount.publicKeyPem,
  };
  for (const [f, content] of Object.entries(files)) await writeFile(join(pkiDir, f), content, { mode: 0o600 });
}

async function allocatePorts(): Promise<ClusterPorts> {
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok };
}

/** One kubeconfig per client identity, each with its own client certificate. */
async function writeKubeconfigs(layout: ClusterLayout, pki: ClusterPki): Promise<void> {
  const { name, server, kubeconfigs } = layout;
  const write = (path: string, pair: CertKeyPair) =>
    writeFile(path, kubeconfigYaml({ name, server, caPem: pki.ca.certPem, ...pair }), { mode: 0o600 });
  await write(kubeconfigs.admin, pki.admin);
  await write(kubeconfigs.controllerManager, pki.controllerManager);
  await write(kubeconfigs.scheduler, pki.scheduler);
  await write(kubeconfigs.kwok, pki.kwok);
}

/**
 * Components in start order; they stop in reverse (the node first, then the apiserver's clients, etcd last: no
 * storms of connection errors).
 */
const COMPONENTS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
  ...NODE_COMPONENTS,
] as const;
type Component = (typeof COMPONENTS)[number];

/** Where a cluster's components run when not on loopback: a bed's namespace, bound to its node address. */
type ComponentNetwork = Pick<BedNetwork, 'nodeIp' | 'wrap'>;

/** The component processes of one cluster; state.json follows them as each starts. */
class ClusterComponents {
  private readonly procs = new Map<string, ManagedProcess>();
  /** Processes started by someone else (the bed's registry), recorded for the watchdog. */
  private readonly tracked = new Map<string, number>();
  private saving = Promise.resolve();

  constructor(
    private readonly layout: ClusterLayout,
    private readonly net: ComponentNetwork | null,
    private readonly record: Omit<ClusterState, 'pids'>,
  ) {}

  get pids(): Record<string, number> {
    return { ...Object.fromEntries([...this.procs].map(([k, p]) => [k, p.pid])), ...Object.fromEntries(this.tracked) };
  }

  /**
   * Starts one component, inside the bed's network namespace when it has one, its output in
   * `logs/<component>.log`, and records its pid.
   */
  async start(component: Component, command: string, args: string[]): Promise<void> {
    const logPath = join(this.layout.logDir, `${component}.log`);
    const line = this.net ? this.net.wrap(command, args) : { command, args };
    this.procs.set(component, await ManagedProcess.start({ name: component, ...line, logPath }));
    await this.saveState();
  }

  async track(name: string, pid: number): Promise<void> {
    this.tracked.set(name, pid);
    await this.saveState();
  }

  /** Any component that dies during start fails the start at once, with its log. */
  readonly guard = async (): Promise<void> => {
    for (const p of this.procs.values()) if (!p.isRunning) throw await p.exitError();
  };

  async stop(component: Component): Promise<void> {
    await this.procs.get(component)?.stop();
  }

  async stopAll(): Promise<void> {
    for (const c of [...COMPONENTS].reverse()) await this.stop(c);
  }

  /** Serialized and atomic (write + rename): components start concurrently, and the watchdog reads it any time. */
  saveState(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const tmp = join(this.layout.dir, `state.json.${process.pid}.tmp`);
      await writeFile(tmp, `${JSON.stringify({ ...this.record, pids: this.pids }, null, 2)}\n`);
      await rename(tmp, join(this.layout.dir, 'state.json'));
    });
    return this.saving;
  }
}

/** What the start steps share. */
interface Boot {
  readonly layout: ClusterLayout;
  readonly bin: ControlPlaneBinaries;
  readonly components: ClusterComponents;
  /** Admin client of the apiserver. */
  readonly http: KubeRestClient;
  /** Aborts the start (its deadline, or the caller's signal). */
  readonly signal: AbortSignal;
  /** Milliseconds left of the start's deadline (at least 1 s). */
  remaining(): number;
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

/**
 * etcd, then the apiserver, then its clients, then the fake nodes (`kwokNodes`; null: a real node follows, no kwok);
 * ready when a Deployment could schedule.
 */
async function bootControlPlane(boot: Boot, kwokNodes: number | null, progress: (line: string) => void): Promise<void> {
  const nodes = kwokNodes ?? 0;
  const t0 = performance.now();
  await startEtcd(boot);
  progress(`etcd healthy after ${ms(t0)}`);
  await startApiserver(boot, boot.remaining());
  progress(`kube-apiserver ready after ${ms(t0)}`);
  await startApiserverClients(boot, kwokNodes !== null);
  await registerFakeNodes(boot.http, boot.layout.name, nodes);
  await waitUntilSchedulable(boot, nodes);
  progress(`cluster ${boot.layout.name} ready after ${ms(t0)}`);
}

/** Polls until `check` holds, within the start's deadline; stops at once when a component exits. */
function waitDuringStart(
  boot: Boot,
  check: () => Promise<boolean>,
  what: string,
  options: { readonly timeoutMs?: number; readonly logOf?: (typeof COMPONENTS)[number] } = {},
): Promise<true> {
  return pollUntil(async () => ((await check()) ? true : undefined), {
    timeoutMs: options.timeoutMs ?? boot.remaining(),
    what,
    ...(options.logOf ? { hint: `see ${join(boot.layout.logDir, `${options.logOf}.log`)}` } : {}),
    guard: boot.components.guard,
    signal: boot.signal,
  });
}

async function startEtcd(boot: Boot): Promise<void> {
  const { layout } = boot;
  await boot.components.start('etcd', boot.bin.etcd, etcdArgs(layout));
  await waitDuringStart(
    boot,
    async () => {
      const res = await fetch(`http://${layout.host}:${layout.ports.etcdClient}/health`, {
        signal: AbortSignal.timeout(1_000),
      });
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    },
    `etcd of cluster "${layout.name}" to report healthy`,
  );
}

async function startApiserver(boot: Boot, timeoutMs: number): Promise<void> {
  const { layout } = boot;
  await boot.components.start('kube-apiserver', boot.bin.kubeApiserver, apiserverArgs(layout));
  await waitDuringStart(
    boot,
    async () =>
      (await boot.http.raw('GET', '/readyz', undefined, undefined, AbortSignal.timeout(2_000))).status === 200,
    `kube-apiserver of cluster "${layout.name}" (${layout.server}) to answer /readyz with 200`,
    { timeoutMs, logOf: 'kube-apiserver' },
  );
}

/** kube-controller-manager, kube-scheduler and kwok (the kubelet of the fake nodes, when any), side by side. */
async function startApiserverClients({ layout, bin, components }: Boot, fakeNodes: boolean): Promise<void> {
  const startKwok = () => components.start('kwok', bin.kwok, kwokArgs(layout, bin.kwokStages));
  await Promise.all([
    components.start('kube-controller-manager', bin.kubeControllerManager, controllerManagerArgs(layout)),
    components.start('kube-scheduler', bin.kubeScheduler, schedulerArgs(layout)),
    ...(fakeNodes ? [startKwok()] : []),
  ]);
}

/** @throws ConfigError when the apiserver refuses a node (409: it exists already, fine). */
async function registerFakeNodes(http: KubeRestClient, name: string, nodes: number): Promise<void> {
  for (let i = 0; i < nodes; i++) {
    const nodeName = `${name}-node-${i}`;
    const res = await http.raw('POST', '/api/v1/nodes', fakeNode(nodeName));
    if (res.status !== 201 && res.status !== 409) {
      throw new ConfigError(
        `registering fake node ${nodeName} failed with HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`,
      );
    }
  }
}

/** A Deployment could become Available: default ServiceAccount present, nodes Ready, scheduler healthy. */
async function waitUntilSchedulable(boot: Boot, nodes: number): Promise<void> {
  const { http, layout } = boot;
  await Promise.all([
    waitDuringStart(
      boot,
      async () => (await http.raw('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200,
      `kube-controller-manager of cluster "${layout.name}" to create the default ServiceAccount`,
      { logOf: 'kube-controller-manager' },
    ),
    waitDuringStart(
      boot,
      async () => (await countReadyNodes(http)) >= nodes,
      `${nodes} kwok node(s) of cluster "${layout.name}" to become Ready`,
      { logOf: 'kwok' },
    ),
    waitDuringStart(
      boot,
      () => probeHealthz(layout.host, layout.ports.scheduler),
      `kube-scheduler of cluster "${layout.name}" to answer /healthz`,
      { logOf: 'kube-scheduler' },
    ),
  ]);
}

async function countReadyNodes(http: KubeRestClient): Promise<number> {
  const res = await http.raw('GET', '/api/v1/nodes');
  const items = (res.body as { items?: NodeLike[] }).items ?? [];
  return items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
}

/** GET /healthz on a component's self-signed secure port (loopback only, so the certificate is not checked). */
function probeHealthz(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsGet({ host, port, path: '/healthz', rejectUnauthorized: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

interface NodeLike {
  status?: { conditions?: { type: string; status: string }[] };
}

function fakeNode(name: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
    },
    spec: {},
    status: {
      allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
      capacity: { cpu: '32', memory: '256Gi', pods: '110' },
      nodeInfo: { architecture: 'amd64', kubeletVersion: 'fake', operatingSystem: 'linux' },
    },
  };
}

function ms(t0: number): string {
  return `${((performance.now() - t0) / 1000).toFixed(1)} s`;
}

/** The watchdog process that stops the cluster when its owner dies. */
interface Reaper {
  kill(): void;
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

async function readState(dir: string): Promise<ClusterState | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

/** Clusters recorded on disk (running or left over), with whether their host process is alive. */
export async function listClusters(
  baseDir = clustersDir(),
): Promise<(ClusterState & { readonly isRunning: boolean })[]> {
  const names = await readdir(baseDir).catch(() => [] as string[]);
  const out: (ClusterState & { isRunning: boolean })[] = [];
  for (const n of names.sort()) {
    const s = await readState(join(baseDir, n));
    if (s) out.push({ ...s, isRunning: isProcessAlive(s.hostPid) && Object.values(s.pids).some(isProcessAlive) });
  }
  return out;
}

/**
 * Stops a cluster by name from any process: its host first (which stops the components cleanly), then
 * any component group still alive, then removes the data directory.
 * @throws ConfigError when no cluster of that name is recorded.
 */
export async function stopClusterByName(name: string, baseDir = clustersDir()): Promise<void> {
  const dir = join(baseDir, name);
  const s = await readState(dir);
  if (!s)
    throw new ConfigError(`no cluster named "${name}" is recorded under ${baseDir}; \`baton testenv ls\` lists them`);
  if (s.hostPid !== process.pid && isProcessAlive(s.hostPid)) {
    try {
      process.kill(s.hostPid, 'SIGTERM');
    } catch {}
    await pollUntil(async () => (isProcessAlive(s.hostPid) ? undefined : true), {
      timeoutMs: 15_000,
      what: `the host process ${s.hostPid} of cluster "${name}" to exit`,
    }).catch(() => {});
  }
  for (const pid of Object.values(s.pids)) signalGroup(pid, 'SIGTERM');
  await pollUntil(async () => (Object.values(s.pids).some(isProcessAlive) ? undefined : true), {
    timeoutMs: 10_000,
    what: `cluster "${name}" to stop`,
  }).catch(() => {
    for (const pid of Object.values(s.pids)) signalGroup(pid, 'SIGKILL');
  });
  await teardownRealNode(dir);
  await rm(dir, { recursive: true, force: true });
}

/** Stops every cluster this process started. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}
