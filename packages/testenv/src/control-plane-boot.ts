// The control plane's start, step by step: etcd, the apiserver, its clients, kwok's fake nodes when asked for, and
// the wait until a Deployment could schedule. Each wait is bounded by the start's deadline and ends at once when a
// component exits.
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import type { KubeRestClient } from '@baton/kube/rest';
import type { ClusterComponents, Component } from './cluster-components.js';
import {
  apiserverArgs,
  type ClusterLayout,
  controllerManagerArgs,
  etcdArgs,
  kwokArgs,
  schedulerArgs,
} from './component-args.js';
import type { ControlPlaneBinaries } from './control-plane-binaries.js';
import { pollUntil } from './poll.js';

/** What the start steps share. */
export interface Boot {
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

/**
 * etcd, then the apiserver, then its clients, then the fake nodes (`kwokNodes`; null: a real node follows, no kwok);
 * ready when a Deployment could schedule.
 */
export async function bootControlPlane(
  boot: Boot,
  kwokNodes: number | null,
  progress: (line: string) => void,
): Promise<void> {
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
  options: { readonly timeoutMs?: number; readonly logOf?: Component } = {},
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

export async function startApiserver(boot: Boot, timeoutMs: number): Promise<void> {
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
