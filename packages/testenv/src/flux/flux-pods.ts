import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalPod, LocalPodProcess, PodRunner, RunningPod } from '../pod-runner.js';
import { startPodRunner } from '../pod-runner.js';
import { freePorts } from '../ports.js';
import type { FluxControllers } from './flux-controllers.js';

/** Image repositories of the Flux Deployments in `bootstrap-manifests/flux`; the tag is not checked. */
export const FLUX_IMAGES = {
  sourceController: 'ghcr.io/fluxcd/source-controller',
  kustomizeController: 'ghcr.io/fluxcd/kustomize-controller',
} as const;

/** Options of {@link startFluxPods}. */
export interface StartFluxPodsOptions {
  /** Admin kubeconfig of the cluster (it only lists pods and requests their tokens). */
  readonly kubeconfigPath: string;
  /** The binaries from {@link ensureFluxControllers}. */
  readonly controllers: FluxControllers;
  /** How often pods are listed. @default 500 */
  readonly pollMs?: number;
}

/** The two Flux controllers' pods running as local processes. */
export interface FluxPods {
  /** Pods that currently have a process. */
  pods(): RunningPod[];
  /** Stops both runners and every process they started. */
  stop(): Promise<void>;
}

/**
 * What a kubelet and the cluster's network give Flux's pods, as local flags: the pod's kubeconfig through
 * KUBECONFIG (Flux parses its flags with pflag, where controller-runtime's Go `--kubeconfig` flag is not
 * registered), every listener on its own loopback port so clusters never collide, and leader election off
 * (controller-runtime finds the lease's namespace only in a mounted ServiceAccount; one replica runs here).
 */
function fluxProcess(portCount: number, extra: (p: LocalPod, ports: number[]) => Promise<string[]> | string[]) {
  return async (p: LocalPod): Promise<LocalPodProcess> => {
    const ports = await freePorts(portCount);
    return {
      args: [
        `--metrics-addr=127.0.0.1:${ports[0]}`,
        `--health-addr=127.0.0.1:${ports[1]}`,
        '--enable-leader-election=false',
        ...(await extra(p, ports)),
      ],
      // Their /tmp emptyDir: checkouts and downloads go to the pod's own directory, removed with the pod.
      env: { KUBECONFIG: p.kubeconfigPath, TMPDIR: p.workDir, TUF_ROOT: `${p.workDir}/.sigstore` },
    };
  };
}

/**
 * Plays kubelet for Flux on a testenv cluster: when source-controller's or kustomize-controller's pod is Running on
 * a kwok node, runs the binary built from Go modules as a local process with that pod's bound ServiceAccount token.
 * source-controller serves its artifacts on a loopback port and advertises it (`--storage-adv-addr`), which is
 * where kustomize-controller downloads them from, as it would from the `source-controller` Service in a cluster. Like
 * a Service's address, that port stays the same for every source-controller pod of the bed: a replaced pod (a
 * restart) serves at the address its artifacts' URLs already name.
 * @throws ProcessError when the admin kubeconfig cannot be read.
 */
export async function startFluxPods(options: StartFluxPodsOptions): Promise<FluxPods> {
  const common = {
    kubeconfigPath: options.kubeconfigPath,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  };
  const runners: PodRunner[] = [];
  const [storagePort] = await freePorts(1);
  try {
    runners.push(
      await startPodRunner({
        ...common,
        imagePrefix: FLUX_IMAGES.sourceController,
        command: [options.controllers.sourceController],
        localProcess: fluxProcess(2, async (p) => {
          // Its /data emptyDir: the storage path must exist before it starts ("invalid dir path").
          await mkdir(join(p.workDir, 'data'), { recursive: true });
          return [
            `--storage-path=${join(p.workDir, 'data')}`,
            `--storage-addr=127.0.0.1:${storagePort}`,
            `--storage-adv-addr=127.0.0.1:${storagePort}`,
          ];
        }),
      }),
    );
    runners.push(
      await startPodRunner({
        ...common,
        imagePrefix: FLUX_IMAGES.kustomizeController,
        command: [options.controllers.kustomizeController],
        localProcess: fluxProcess(2, () => []),
      }),
    );
  } catch (err) {
    await Promise.all(runners.map((r) => r.stop()));
    throw err;
  }
  return {
    pods: () => runners.flatMap((r) => r.pods()),
    stop: async () => {
      await Promise.all(runners.map((r) => r.stop()));
    },
  };
}
