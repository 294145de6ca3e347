import { join } from 'node:path';
import { KUBERNETES_VERSIONS, kubeBuildFlags, resolveKubernetesVersion } from '../control-plane-binaries.js';
import { ensureGoBuild, type GoBuildResult, type GoBuildSpec } from '../go-build.js';
import { cacheRoot, goModulesDir } from '../paths.js';

/** CoreDNS, linked by `go/node-extras` with the plugins a bed's DNS uses. */
export const COREDNS_VERSION = 'v1.15.0';

/** Kubernetes versions whose kubelet and kube-proxy the bed builds (`go/kube-node/<version>`). */
export const NODE_KUBERNETES_VERSIONS = KUBERNETES_VERSIONS;

/**
 * kubelet and kube-proxy of one version, from a wrapper module of their own: the control plane's module (and so its
 * cache key, a 7–10 min build) stays as it was, while the Go build cache shares every package both link.
 */
function kubeNodeSpec(v: string): GoBuildSpec {
  return {
    name: 'kube-node',
    usualSeconds: 320,
    moduleDir: join(goModulesDir, 'kube-node', v),
    packages: ['kubelet', 'kube-proxy'].map((c) => `k8s.io/kubernetes/cmd/${c}`),
    // The same flags as the control plane: upstream builds kubelet with cgo only for features a bed does not use.
    ...kubeBuildFlags(v),
  };
}

function nodeExtrasSpec(): GoBuildSpec {
  return {
    name: 'node-extras',
    usualSeconds: 170,
    moduleDir: join(goModulesDir, 'node-extras'),
    packages: ['baton.dev/testenv/node-extras/pause', 'baton.dev/testenv/node-extras/coredns'],
    env: { CGO_ENABLED: '0' },
    versions: { coredns: COREDNS_VERSION },
  };
}

/** Paths of the node's own binaries (containerd, runc and the CNI plugins come from Debian). */
export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly coredns: string;
  readonly pause: string;
  readonly builds: readonly GoBuildResult[];
  readonly kubernetesVersion: string;
}

/** Options of {@link ensureNodeBinaries}. */
export interface EnsureNodeBinariesOptions {
  readonly cacheDir?: string;
  readonly onProgress?: (line: string) => void;
  readonly kubernetesVersion?: string;
  /** Rebuild even when cached. @default false */
  readonly force?: boolean;
}

/**
 * The version of kubelet and kube-proxy a bed of Kubernetes `version` runs: the same version (each has its own
 * wrapper module, `go/kube-node/<version>`), or undefined for a version the bed does not build.
 */
export function nodeVersionFor(version: string): string | undefined {
  return (NODE_KUBERNETES_VERSIONS as readonly string[]).includes(version) ? version : undefined;
}

const memo = new Map<string, Promise<NodeBinaries>>();

/**
 * Builds (once per pin) or reuses kubelet, kube-proxy, CoreDNS and pause.
 * @throws BuildError when a build fails, ConfigError for a version without a node build.
 */
export function ensureNodeBinaries(options: EnsureNodeBinariesOptions = {}): Promise<NodeBinaries> {
  const k = resolveKubernetesVersion(options.kubernetesVersion);
  const key = `${k}:${options.cacheDir ?? ''}`;
  const memoed = memo.get(key);
  if (memoed && !options.force) return memoed;
  const run = (async () => {
    const opts = {
      cacheDir: options.cacheDir ?? join(cacheRoot(), 'testenv', 'bin'),
      force: options.force ?? false,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
    const node = await ensureGoBuild(kubeNodeSpec(k), opts);
    const extras = await ensureGoBuild(nodeExtrasSpec(), opts);
    return {
      kubelet: node.binaries.kubelet!,
      kubeProxy: node.binaries['kube-proxy']!,
      coredns: extras.binaries.coredns!,
      pause: extras.binaries.pause!,
      builds: [node, extras],
      kubernetesVersion: k,
    };
  })();
  memo.set(key, run);
  run.catch(() => memo.delete(key));
  return run;
}
