import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, ProcessError } from '@baton/errors';
import type { KubeRestClient } from '@baton/kube/rest';
import { kubeconfigYaml } from '../kubeconfig.js';
import type { ClusterPki } from '../pki.js';
import { pollUntil } from '../poll.js';
import { freePorts } from '../ports.js';
import { type LocalRegistry, startRegistry } from '../registry.js';
import type { BedNetwork } from './bed-network.js';
import { layoutDigest, PAUSE_REPOSITORY, PAUSE_TAG, pauseImageLayout } from './binary-image.js';
import type { NodeBinaries } from './node-binaries.js';
import {
  CLUSTER_DNS_IP,
  cniConfDir,
  cniConflist,
  containerdConfig,
  containerdSocket,
  corefile,
  kubeletArgs,
  kubeletConfig,
  kubeProxyConfig,
  type NodeLayout,
  registryHostFiles,
} from './node-config.js';

const run = promisify(execFile);

/** The node's processes, in start order (they stop in reverse, before the control plane). */
export const NODE_COMPONENTS = ['containerd', 'kubelet', 'kube-proxy', 'coredns'] as const;
export type NodeComponent = (typeof NODE_COMPONENTS)[number];

/** Registry hosts whose images a bed serves from its own registry, by digest (what the profiles pin). */
// ghcr.io: baton's and Flux's images; quay.io and public.ecr.aws: Argo CD's and its redis.
export const MIRRORED_REGISTRIES = ['ghcr.io', 'quay.io', 'public.ecr.aws'] as const;

/** What a real node needs of the cluster that starts it. */
export interface RealNodeContext {
  readonly clusterName: string;
  readonly clusterDir: string;
  readonly pkiDir: string;
  readonly pki: ClusterPki;
  readonly net: BedNetwork;
  /** The apiserver as the node reaches it, `https://<node address>:<port>`. */
  readonly server: string;
  readonly http: KubeRestClient;
  readonly bin: NodeBinaries;
  /** Starts a node process inside the bed's namespace, its log in the cluster's logs. */
  start(component: NodeComponent, command: string, args: string[]): Promise<void>;
  /** Records a process the cluster did not start itself (the registry), for the watchdog. */
  track(name: string, pid: number): Promise<void>;
  /** Throws when a component has exited. */
  guard(): Promise<void>;
  readonly signal: AbortSignal;
  remaining(): number;
  readonly logDir: string;
}

/** A real node serving one bed. */
export interface RealNode {
  readonly nodeName: string;
  /** The bed's registry, inside the namespace at the node address: `pushImage` targets it. */
  readonly registry: LocalRegistry;
  /** Seconds from kubelet's start to the node's Ready condition. */
  readonly readySeconds: number;
  /** containerd's state and socket. */
  readonly runDir: string;
}

/**
 * The host pid of a container's first process, from its runc bundle under containerd's state.
 * @throws ConfigError when this node runs no such container.
 */
export function containerPid(runDir: string, containerId: string): number {
  const id = containerId.replace(/^containerd:\/\//, '');
  const file = join(runDir, 'containerd-state', 'io.containerd.runtime.v2.task', 'k8s.io', id, 'init.pid');
  try {
    return Number.parseInt(readFileSync(file, 'utf8'), 10);
  } catch (err) {
    throw new ConfigError(`container ${id} is not running on this node (no ${file})`, { cause: err });
  }
}

/** The teardown every exit path runs (also the watchdog's): see bin/node-teardown.mjs. */
export const NODE_TEARDOWN_SCRIPT = new URL('../../bin/node-teardown.mjs', import.meta.url).pathname;

/**
 * Starts a real node inside the bed's namespace: the bed's registry (with the pause image), containerd, kubelet,
 * kube-proxy and CoreDNS, and waits until the node is Ready and cluster DNS answers.
 * @throws ProcessError when a component exits; TimeoutError naming what did not become ready.
 */
export async function startRealNode(ctx: RealNodeContext): Promise<RealNode> {
  const nodeName = `${ctx.clusterName}-node-0`;
  const dir = join(ctx.clusterDir, 'node');
  const runDir = join('/run/baton', ctx.clusterName);
  await mkdir(dir, { recursive: true });
  await mkdir(runDir, { recursive: true });
  const registry = await startRegistry({ bindHost: ctx.net.nodeIp, wrap: ctx.net.wrap, dir: join(dir, 'registry') });
  try {
    return await startNodeWith(ctx, { nodeName, dir, runDir, registry });
  } catch (err) {
    await registry.stop();
    throw err;
  }
}

async function startNodeWith(
  ctx: RealNodeContext,
  { nodeName, dir, runDir, registry }: { nodeName: string; dir: string; runDir: string; registry: LocalRegistry },
): Promise<RealNode> {
  await ctx.track('registry', registry.pid);
  const pauseLayout = await pauseImageLayout(ctx.bin.pause);
  const pauseDigest = await registry.push(pauseLayout, PAUSE_REPOSITORY, PAUSE_TAG);
  if (pauseDigest !== (await layoutDigest(pauseLayout)))
    throw new ProcessError(`the bed's registry stored the pause image under another digest (${pauseDigest})`);

  const n: NodeLayout = {
    nodeName,
    nodeIp: ctx.net.nodeIp,
    dir,
    runDir,
    pkiDir: ctx.pkiDir,
    registryHost: registry.host,
    pauseImage: `${registry.host}/${PAUSE_REPOSITORY}@${pauseDigest}`,
    mirroredRegistries: MIRRORED_REGISTRIES,
    kubeletKubeconfig: join(dir, 'kubelet.kubeconfig'),
    kubeProxyKubeconfig: join(dir, 'kube-proxy.kubeconfig'),
    corednsKubeconfig: join(dir, 'coredns.kubeconfig'),
  };
  await writeNodeFiles(ctx, n);

  const t0 = performance.now();
  await ctx.start('containerd', '/usr/bin/containerd', ['--config', join(dir, 'containerd.toml')]);
  await waitFor(ctx, () => containerdAnswers(n), 'containerd to answer on its socket', 'containerd');
  await createClusterDns(ctx.http, ctx.net.nodeIp);
  await ctx.start('kubelet', ctx.bin.kubelet, kubeletArgs(n));
  const [kpHealth, kpMetrics, dnsReady, dnsHealth] = (await freePorts(4)) as [number, number, number, number];
  await writeFile(join(dir, 'kube-proxy.json'), kubeProxyConfig(n, kpHealth, kpMetrics));
  await ctx.start('kube-proxy', ctx.bin.kubeProxy, [`--config=${join(dir, 'kube-proxy.json')}`]);
  await writeFile(join(dir, 'Corefile'), corefile(n, dnsReady, dnsHealth));
  await ctx.start('coredns', ctx.bin.coredns, ['-conf', join(dir, 'Corefile')]);
  await waitFor(ctx, () => nodeReady(ctx.http, nodeName), `node ${nodeName} to become Ready`, 'kubelet');
  const readySeconds = Math.round((performance.now() - t0) / 100) / 10;
  await waitFor(
    ctx,
    () => corednsReady(`http://${ctx.net.nodeIp}:${dnsReady}/ready`),
    'CoreDNS to report ready',
    'coredns',
  );
  return { nodeName, registry, readySeconds, runDir };
}

async function writeNodeFiles(ctx: RealNodeContext, n: NodeLayout): Promise<void> {
  const { pki } = ctx;
  const kubeconfig = (pair: { certPem: string; keyPem: string }) =>
    kubeconfigYaml({ name: ctx.clusterName, server: ctx.server, caPem: pki.ca.certPem, ...pair });
  const files: Record<string, string> = {
    'containerd.toml': containerdConfig(n),
    'kubelet.json': kubeletConfig(n, 0),
    'resolv.conf': '# a bed has no upstream resolver: cluster DNS answers for cluster.local only\n',
    [n.kubeletKubeconfig]: kubeconfig(pki.kubelet),
    [n.kubeProxyKubeconfig]: kubeconfig(pki.kubeProxy),
    [n.corednsKubeconfig]: kubeconfig(pki.coredns),
    [join(cniConfDir(n), '10-bed.conflist')]: cniConflist(n),
  };
  for (const [rel, text] of Object.entries(registryHostFiles(n))) files[join(n.dir, 'certs.d', rel)] = text;
  for (const [name, text] of Object.entries(files)) {
    const path = name.startsWith('/') ? name : join(n.dir, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text, { mode: 0o600 });
  }
  // What the teardown (and the watchdog, if this process dies) needs to find everything the node leaves.
  await writeFile(
    join(n.dir, 'node.json'),
    `${JSON.stringify({ netns: ctx.net.name, hostLink: ctx.net.hostLink, dir: n.dir, runDir: n.runDir, containerdSocket: containerdSocket(n) }, null, 2)}\n`,
  );
}

async function containerdAnswers(n: NodeLayout): Promise<boolean> {
  try {
    await run('ctr', ['--address', containerdSocket(n), 'version'], { timeout: 2_000 });
    return true;
  } catch {
    return false;
  }
}

/** CoreDNS's ready plugin; a 503 names the plugins not ready yet, which the timeout message then carries. */
async function corednsReady(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  if (res.ok) return true;
  throw new Error(`${url} answered ${res.status} ${(await res.text()).trim().slice(0, 200)}`);
}

async function nodeReady(http: KubeRestClient, name: string): Promise<boolean> {
  const res = await http.raw('GET', `/api/v1/nodes/${name}`);
  const conditions = (res.body as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions;
  return res.status === 200 && conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** kubeadm's CoreDNS role and binding, and the kube-dns Service at the clusterDNS address, served on the node. */
async function createClusterDns(http: KubeRestClient, nodeIp: string): Promise<void> {
  const objects: [string, unknown][] = [
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      {
        metadata: { name: 'system:coredns' },
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      },
    ],
    [
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        metadata: { name: 'system:coredns' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:coredns' }],
      },
    ],
    [
      '/api/v1/namespaces/kube-system/services',
      {
        metadata: { name: 'kube-dns', labels: { 'k8s-app': 'kube-dns' } },
        spec: {
          clusterIP: CLUSTER_DNS_IP,
          ports: [
            { name: 'dns', port: 53, protocol: 'UDP' },
            { name: 'dns-tcp', port: 53, protocol: 'TCP' },
          ],
        },
      },
    ],
    [
      '/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices',
      {
        metadata: { name: 'kube-dns-node', labels: { 'kubernetes.io/service-name': 'kube-dns' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [nodeIp], conditions: { ready: true } }],
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, protocol: 'TCP' },
        ],
      },
    ],
  ];
  for (const [path, body] of objects) {
    const res = await http.raw('POST', path, body);
    if (res.status !== 201 && res.status !== 409)
      throw new ProcessError(`creating cluster DNS: POST ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
}

function waitFor(ctx: RealNodeContext, check: () => Promise<boolean>, what: string, logOf: string): Promise<true> {
  return pollUntil(async () => ((await check()) ? true : undefined), {
    timeoutMs: ctx.remaining(),
    intervalMs: 100,
    what,
    hint: `see ${join(ctx.logDir, `${logOf}.log`)}`,
    guard: ctx.guard,
    signal: ctx.signal,
  });
}

/** Runs the node's teardown (bin/node-teardown.mjs) for the cluster in `clusterDir`; never throws. */
export async function teardownRealNode(clusterDir: string): Promise<void> {
  await run(process.execPath, [NODE_TEARDOWN_SCRIPT, clusterDir], { timeout: 60_000 }).catch(() => {});
}
