import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { ConfigError, ProcessError } from '@baton/errors';
import {
  CONTROL_PLANE_VERSIONS,
  type ControlPlaneBinaries,
  ensureControlPlaneBinaries,
} from './control-plane-binaries.js';
import { withFileLock } from './file-lock.js';
import { isAlive } from './is-alive.js';
import { KubeHttp } from './kube-http.js';
import { kubeconfigYaml } from './kubeconfig.js';
import { writeKwokStages } from './kwok-stages.js';
import { ManagedProcess, signalGroup } from './managed-process.js';
import { cacheRoot } from './paths.js';
import { createClusterPki } from './pki.js';
import { pollUntil } from './poll.js';
import { freePorts } from './ports.js';

/** Options of {@link startCluster}. */
export interface StartClusterOptions {
  /** Cluster name: lowercase letters, digits and '-'. @default `baton-<random>` */
  readonly name?: string;
  /** Number of kwok fake nodes. @default 1 */
  readonly nodes?: number;
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
  /** Prebuilt binaries (tests share one set). @default ensureControlPlaneBinaries() */
  readonly binaries?: ControlPlaneBinaries;
}

/** A running local control plane. */
export interface Cluster {
  readonly name: string;
  /** Admin kubeconfig (O=system:masters client certificate). */
  readonly kubeconfigPath: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
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
  const progress = options.onProgress ?? (() => {});
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  const signal = AbortSignal.any([
    AbortSignal.timeout(timeoutMs + 10_000),
    ...(options.signal ? [options.signal] : []),
  ]);
  const deadline = performance.now() + timeoutMs;
  const remaining = () => Math.max(1_000, deadline - performance.now());

  const bin = options.binaries ?? (await ensureControlPlaneBinaries({ onProgress: progress }));
  const base = options.baseDir ?? clustersDir();
  const dir = join(base, name);
  await mkdir(base, { recursive: true });
  // Check and claim under a lock: two processes starting the same name at once would otherwise both wipe the
  // directory and overwrite each other's PKI. The claim covers the seconds before state.json exists.
  await withFileLock(join(base, `.${name}.lock`), async () => {
    const prev = await readState(dir);
    const claim = Number.parseInt(await readFile(join(dir, CLAIM_FILE), 'utf8').catch(() => ''), 10);
    const holder =
      prev && isAlive(prev.hostPid)
        ? `pid ${prev.hostPid}, ${prev.server}`
        : Number.isFinite(claim) && claim !== process.pid && isAlive(claim)
          ? `being started by pid ${claim}`
          : undefined;
    if (holder) {
      throw new ConfigError(
        `a cluster named "${name}" is already running (${holder}); choose another --name or stop it with \`baton testenv down --name ${name}\``,
      );
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, CLAIM_FILE), String(process.pid));
  });
  const pkiDir = join(dir, 'pki');
  const logDir = join(dir, 'logs');
  await mkdir(pkiDir, { recursive: true });
  await mkdir(logDir, { recursive: true });

  const pki = await createClusterPki();
  const files: Record<string, string> = {
    'ca.crt': pki.ca.certPem,
    'ca.key': pki.ca.keyPem,
    'apiserver.crt': pki.apiserver.certPem,
    'apiserver.key': pki.apiserver.keyPem,
    'sa.key': pki.serviceAccount.privateKeyPem,
    'sa.pub': pki.serviceAccount.publicKeyPem,
  };
  for (const [f, content] of Object.entries(files)) await writeFile(join(pkiDir, f), content, { mode: 0o600 });

  const [etcdClient, etcdPeer, apiPort, kcmPort, schedPort, kwokPort] = (await freePorts(6)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfigs = {
    admin: join(dir, 'kubeconfig'),
    kcm: join(dir, 'controller-manager.kubeconfig'),
    scheduler: join(dir, 'scheduler.kubeconfig'),
    kwok: join(dir, 'kwok.kubeconfig'),
  };
  const writeKc = (path: string, pair: { certPem: string; keyPem: string }) =>
    writeFile(path, kubeconfigYaml({ name, server, caPem: pki.ca.certPem, ...pair }), { mode: 0o600 });
  await writeKc(kubeconfigs.admin, pki.admin);
  await writeKc(kubeconfigs.kcm, pki.controllerManager);
  await writeKc(kubeconfigs.scheduler, pki.scheduler);
  await writeKc(kubeconfigs.kwok, pki.kwok);
  const auditLogPath = options.auditLog === false ? null : join(dir, 'audit.log');
  if (auditLogPath) await writeFile(join(dir, 'audit-policy.yaml'), AUDIT_POLICY);

  const procs = new Map<string, ManagedProcess>();
  const ownerPid = options.ownerPid === undefined ? process.pid : options.ownerPid;
  const state = (): ClusterState => ({
    name,
    server,
    kubeconfigPath: kubeconfigs.admin,
    auditLogPath,
    dir,
    ownerPid,
    hostPid: process.pid,
    keep: options.keep ?? false,
    startedAt,
    pids: Object.fromEntries([...procs].map(([k, p]) => [k, p.pid])),
    versions: { ...CONTROL_PLANE_VERSIONS },
  });
  const startedAt = new Date().toISOString();
  // Serialized and atomic (write + rename): components start concurrently, and the watchdog reads it any time.
  let saving = Promise.resolve();
  const saveState = () => {
    saving = saving.then(async () => {
      const tmp = join(dir, `state.json.${process.pid}.tmp`);
      await writeFile(tmp, `${JSON.stringify(state(), null, 2)}\n`);
      await rename(tmp, join(dir, 'state.json'));
    });
    return saving;
  };
  await saveState();
  const reaper = ownerPid === null ? null : startReaper(ownerPid, dir);

  const start = async (component: string, command: string, args: string[]) => {
    const p = await ManagedProcess.start({ name: component, command, args, logPath: join(logDir, `${component}.log`) });
    procs.set(component, p);
    await saveState();
    return p;
  };
  // Any component that dies during start fails the start at once, with its log.
  const guard = async () => {
    for (const p of procs.values()) if (!p.isRunning) throw await p.exitError();
  };

  const apiserverArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdClient}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    // The Endpoints of the kubernetes Service may not point at loopback.
    '--endpoint-reconciler-type=none',
    `--cert-dir=${pkiDir}`,
    `--tls-cert-file=${join(pkiDir, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pkiDir, 'apiserver.key')}`,
    `--client-ca-file=${join(pkiDir, 'ca.crt')}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(pkiDir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pkiDir, 'sa.key')}`,
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    '--profiling=false',
    ...(auditLogPath
      ? [
          `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
          `--audit-log-path=${auditLogPath}`,
          '--audit-log-format=json',
          // Blocking: a request's audit line is on disk before the response, so tests can read it at once.
          '--audit-log-mode=blocking',
          '--audit-log-maxbackup=1',
        ]
      : []),
  ];

  const cluster: Cluster = {
    name,
    kubeconfigPath: kubeconfigs.admin,
    server,
    caData: Buffer.from(pki.ca.certPem).toString('base64'),
    auditLogPath,
    dir,
    get pids() {
      return state().pids;
    },
    stop: async () => {
      running.delete(cluster);
      http.close();
      // Reverse order: clients first, etcd last, so nothing logs storms of connection errors.
      for (const c of ['kwok', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
        await procs.get(c)?.stop();
      }
      reaper?.kill();
      if (!options.keep) await rm(dir, { recursive: true, force: true });
      else await saveState();
    },
    restartApiserver: async () => {
      await procs.get('kube-apiserver')?.stop();
      await start('kube-apiserver', bin.kubeApiserver, apiserverArgs);
      await waitApiserver(60_000);
    },
  };
  const http = new KubeHttp({ server, caPem: pki.ca.certPem, certPem: pki.admin.certPem, keyPem: pki.admin.keyPem });
  const waitApiserver = (ms: number) =>
    pollUntil(
      async () => ((await http.request('GET', '/readyz', undefined, 2_000)).status === 200 ? true : undefined),
      {
        timeoutMs: ms,
        what: `kube-apiserver of cluster "${name}" (${server}) to answer /readyz with 200`,
        hint: `see ${join(logDir, 'kube-apiserver.log')}`,
        guard,
        signal,
      },
    );
  running.add(cluster);

  try {
    const t0 = performance.now();
    await start('etcd', bin.etcd, [
      `--name=${name}`,
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=${name}=http://127.0.0.1:${etcdPeer}`,
      // A disposable test cluster: durability across power loss buys nothing, and fsync dominates start time.
      '--unsafe-no-fsync',
      '--log-level=warn',
      '--quota-backend-bytes=1073741824',
    ]);
    await pollUntil(
      async () => {
        const res = await fetch(`http://127.0.0.1:${etcdClient}/health`, { signal: AbortSignal.timeout(1_000) });
        return res.ok && ((await res.json()) as { health?: string }).health === 'true' ? true : undefined;
      },
      { timeoutMs: remaining(), what: `etcd of cluster "${name}" to report healthy`, guard, signal },
    );
    progress(`etcd healthy after ${ms(t0)}`);

    await start('kube-apiserver', bin.kubeApiserver, apiserverArgs);
    await waitApiserver(remaining());
    progress(`kube-apiserver ready after ${ms(t0)}`);

    await Promise.all([
      start('kube-controller-manager', bin.kubeControllerManager, [
        `--kubeconfig=${kubeconfigs.kcm}`,
        `--authentication-kubeconfig=${kubeconfigs.kcm}`,
        `--authorization-kubeconfig=${kubeconfigs.kcm}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        `--cert-dir=${join(pkiDir, 'kcm')}`,
        '--use-service-account-credentials=true',
        `--service-account-private-key-file=${join(pkiDir, 'sa.key')}`,
        `--root-ca-file=${join(pkiDir, 'ca.crt')}`,
        `--cluster-signing-cert-file=${join(pkiDir, 'ca.crt')}`,
        `--cluster-signing-key-file=${join(pkiDir, 'ca.key')}`,
        '--leader-elect=false',
        '--profiling=false',
      ]),
      start('kube-scheduler', bin.kubeScheduler, [
        `--kubeconfig=${kubeconfigs.scheduler}`,
        `--authentication-kubeconfig=${kubeconfigs.scheduler}`,
        `--authorization-kubeconfig=${kubeconfigs.scheduler}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${schedPort}`,
        `--cert-dir=${join(pkiDir, 'scheduler')}`,
        '--leader-elect=false',
        '--profiling=false',
      ]),
      start('kwok', bin.kwok, [
        `--kubeconfig=${kubeconfigs.kwok}`,
        `--config=${await writeKwokStages(bin.kwokStages, dir)}`,
        '--manage-all-nodes=false',
        '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
        '--node-lease-duration-seconds=40',
        `--server-address=127.0.0.1:${kwokPort}`,
        '--cidr=10.244.0.0/16',
        '--node-ip=127.0.0.1',
      ]),
    ]);

    for (let i = 0; i < nodes; i++) {
      const nodeName = `${name}-node-${i}`;
      const res = await http.request('POST', '/api/v1/nodes', fakeNode(nodeName));
      if (res.status !== 201 && res.status !== 409) {
        throw new ConfigError(
          `registering fake node ${nodeName} failed with HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`,
        );
      }
    }

    await Promise.all([
      pollUntil(
        async () => {
          const res = await http.request('GET', '/api/v1/namespaces/default/serviceaccounts/default');
          return res.status === 200 ? true : undefined;
        },
        {
          timeoutMs: remaining(),
          what: `kube-controller-manager of cluster "${name}" to create the default ServiceAccount`,
          hint: `see ${join(logDir, 'kube-controller-manager.log')}`,
          guard,
          signal,
        },
      ),
      pollUntil(
        async () => {
          const res = await http.request('GET', '/api/v1/nodes');
          const items = (res.body as { items?: NodeLike[] }).items ?? [];
          const ready = items.filter((n) =>
            n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          );
          return ready.length >= nodes ? true : undefined;
        },
        {
          timeoutMs: remaining(),
          what: `${nodes} kwok node(s) of cluster "${name}" to become Ready`,
          hint: `see ${join(logDir, 'kwok.log')}`,
          guard,
          signal,
        },
      ),
      pollUntil(async () => ((await probeHealthz(schedPort)) ? true : undefined), {
        timeoutMs: remaining(),
        what: `kube-scheduler of cluster "${name}" to answer /healthz`,
        hint: `see ${join(logDir, 'kube-scheduler.log')}`,
        guard,
        signal,
      }),
    ]);
    progress(`cluster ${name} ready after ${ms(t0)}`);
    return cluster;
  } catch (err) {
    await cluster.stop().catch(() => {});
    throw err;
  }
}

/** GET /healthz on a component's self-signed secure port (loopback only, so the certificate is not checked). */
function probeHealthz(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsGet(
      { host: '127.0.0.1', port, path: '/healthz', rejectUnauthorized: false, timeout: 1_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
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

function startReaper(ownerPid: number, dir: string) {
  const script = new URL('../bin/reaper.mjs', import.meta.url).pathname;
  const child = spawn(process.execPath, [script, String(ownerPid), dir], { detached: true, stdio: 'ignore' });
  child.unref();
  return { kill: () => child.pid && signalGroup(child.pid, 'SIGTERM') };
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
    if (s) out.push({ ...s, isRunning: isAlive(s.hostPid) && Object.values(s.pids).some(isAlive) });
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
  if (s.hostPid !== process.pid && isAlive(s.hostPid)) {
    try {
      process.kill(s.hostPid, 'SIGTERM');
    } catch {}
    await pollUntil(async () => (isAlive(s.hostPid) ? undefined : true), {
      timeoutMs: 15_000,
      what: `the host process ${s.hostPid} of cluster "${name}" to exit`,
    }).catch(() => {});
  }
  for (const pid of Object.values(s.pids)) signalGroup(pid, 'SIGTERM');
  await pollUntil(async () => (Object.values(s.pids).some(isAlive) ? undefined : true), {
    timeoutMs: 10_000,
    what: `cluster "${name}" to stop`,
  }).catch(() => {
    for (const pid of Object.values(s.pids)) signalGroup(pid, 'SIGKILL');
  });
  await rm(dir, { recursive: true, force: true });
}

/** Stops every cluster this process started. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}
