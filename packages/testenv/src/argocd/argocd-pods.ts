import type { LocalPod, LocalPodProcess, PodRunner, RunningPod } from '../pod-runner.js';
import { startPodRunner } from '../pod-runner.js';
import { freePorts } from '../ports.js';
import type { ArgoCd } from './argocd-build.js';
import { ARGOCD_IMAGES } from './argocd-images.js';

/** Pod name prefixes of the Argo CD programs the push carries, which run here as local processes. */
const ARGOCD_PROGRAM_PODS = ['argocd-application-controller-', 'argocd-repo-server-'] as const;

/** Options of {@link startArgoCdPods}. */
export interface StartArgoCdPodsOptions {
  /** Admin kubeconfig of the cluster (it only lists pods and requests their tokens). */
  readonly kubeconfigPath: string;
  /** The binary from {@link ensureArgoCd}. */
  readonly argocd: ArgoCd;
  /** Seconds between the application controller's refreshes of each Application (upstream: 120). @default 5 */
  readonly appResyncSeconds?: number;
  /** How often pods are listed. @default 500 */
  readonly pollMs?: number;
  /** The redis server executable (Debian's `redis-server`, installed by scripts/setup.sh). @default 'redis-server' */
  readonly redisServer?: string;
}

/** Argo CD's three pods running as local processes, and the loopback ports they talk on. */
export interface ArgoCdPods {
  /** Pods that currently have a process. */
  pods(): RunningPod[];
  /** The repo-server's gRPC port and redis's port on 127.0.0.1 (the Services' addresses in a cluster). */
  readonly ports: { readonly repoServer: number; readonly redis: number };
  /** Stops every runner and every process they started. */
  stop(): Promise<void>;
}

/**
 * Plays kubelet for Argo CD on a testenv cluster: when the application controller's, the repo-server's or redis's pod
 * is Running on a kwok node, runs it as a local process with that pod's bound ServiceAccount token. The
 * `argocd-repo-server` and `argocd-redis` Services' addresses are loopback ports chosen here and handed to the
 * controller (as the Services' DNS names would be in a cluster); the local cluster is `https://kubernetes.default.svc`
 * through the pod's kubeconfig (`ARGOCD_FAKE_IN_CLUSTER`). helm and kustomize are not installed: Applications here use
 * plain directories.
 * @throws ProcessError when the admin kubeconfig cannot be read.
 */
export async function startArgoCdPods(options: StartArgoCdPodsOptions): Promise<ArgoCdPods> {
  const [repoServer, redis] = (await freePorts(2)) as [number, number];
  const common = {
    kubeconfigPath: options.kubeconfigPath,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  };
  const redisAddr = `127.0.0.1:${redis}`;
  const runners: PodRunner[] = [];
  try {
    runners.push(
      await startPodRunner({
        ...common,
        imagePrefix: ARGOCD_IMAGES.redis,
        command: [options.redisServer ?? 'redis-server'],
        localProcess: (p) => ({
          // After the container's own `--requirepass $(REDIS_PASSWORD)`, which the pod runner expands from the pushed
          // `argocd-redis` Secret (the pod waits in CreateContainerConfigError while that Secret is missing).
          args: ['--port', String(redis), '--bind', '127.0.0.1', '--dir', p.workDir],
        }),
      }),
    );
    runners.push(
      await startPodRunner({
        ...common,
        imagePrefix: ARGOCD_IMAGES.argocd,
        // The pushed programs only: argocd-server, dex, notifications and the ApplicationSet controller (from Git
        // with cluster-admin) share the image but have no stand-in here, and are left to kwok.
        podFilter: (p) => ARGOCD_PROGRAM_PODS.some((prefix) => p.name.startsWith(prefix)),
        command: [options.argocd.binary],
        localProcess: (p) => argoCdProcess(p, options, { repoServer, redisAddr }),
      }),
    );
  } catch (err) {
    await Promise.all(runners.map((r) => r.stop()));
    throw err;
  }
  return {
    pods: () => runners.flatMap((r) => r.pods()),
    ports: { repoServer, redis },
    stop: async () => {
      await Promise.all(runners.map((r) => r.stop()));
    },
  };
}

/**
 * What a kubelet and the cluster's network give the application controller's and the repo-server's pods (both run
 * the one multi-call binary, which picks its program from `ARGOCD_BINARY_NAME`): the pod's kubeconfig, the
 * Services' loopback addresses (REDIS_PASSWORD comes from the pod's own Secret reference), a metrics port of its own, and the pod's directory for /tmp and
 * /home/argocd. git finds the askpass helper as `argocd` on PATH.
 */
async function argoCdProcess(
  p: LocalPod,
  o: StartArgoCdPodsOptions,
  addr: { readonly repoServer: number; readonly redisAddr: string },
): Promise<LocalPodProcess> {
  const [metrics] = (await freePorts(1)) as [number];
  const env = {
    KUBECONFIG: p.kubeconfigPath,
    ARGOCD_FAKE_IN_CLUSTER: 'true',
    ARGOCD_GPG_ENABLED: 'false',
    ARGOCD_ASK_PASS_SOCK: `${p.workDir}/ask-pass.sock`,
    HOME: p.workDir,
    TMPDIR: p.workDir,
    PATH: `${o.argocd.binDir}:${process.env.PATH ?? ''}`,
  };
  if (p.name.startsWith('argocd-repo-server')) {
    return {
      args: [
        '--address=127.0.0.1',
        `--port=${addr.repoServer}`,
        '--metrics-address=127.0.0.1',
        `--metrics-port=${metrics}`,
        `--redis=${addr.redisAddr}`,
        // How long a branch's resolved commit is cached (upstream: 3 min): as short as the controller's resync here,
        // so a commit is seen within seconds, as Flux's 5 s interval does in the test bed.
        `--revision-cache-expiration=${o.appResyncSeconds ?? 5}s`,
        '--disable-tls',
        '--client-ca-path=',
      ],
      env: { ...env, ARGOCD_BINARY_NAME: 'argocd-repo-server' },
    };
  }
  return {
    args: [
      `--namespace=${p.namespace}`,
      `--repo-server=127.0.0.1:${addr.repoServer}`,
      '--repo-server-plaintext',
      `--redis=${addr.redisAddr}`,
      `--metrics-port=${metrics}`,
      `--app-resync=${o.appResyncSeconds ?? 5}`,
    ],
    env: { ...env, ARGOCD_BINARY_NAME: 'argocd-application-controller' },
  };
}
