import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError } from '@baton/errors';
import { ensureGoBuild, type GoBuildResult, type GoBuildSpec } from './go-build.js';
import { cacheRoot, goModulesDir } from './paths.js';

const execFileAsync = promisify(execFile);

/** The pinned versions of the local control plane. Changing one rebuilds exactly what depends on it. */
export const CONTROL_PLANE_VERSIONS = {
  kubernetes: 'v1.36.3',
  etcd: 'v3.6.16',
  kwok: 'v0.8.0',
} as const;

/**
 * Every k8s.io/kubernetes version the test bed builds (oldest first), each from its own wrapper module
 * `go/kube/<version>` that `scripts/gen-kube-gomod.mjs` (in this package) writes from that version's go.mod. All
 * build with the local Go 1.26: their go.mod `go` lines say 1.24.0 (1.34), 1.25.0 (1.35) and 1.26.0 (1.36, 1.37).
 */
export const KUBERNETES_VERSIONS = ['v1.34.4', 'v1.35.4', 'v1.36.3', 'v1.37.2'] as const;

/** The environment variable that picks the Kubernetes version of every test cluster (`pnpm test:compat`). */
export const KUBERNETES_VERSION_ENV = 'BATON_KUBERNETES_VERSION';

/**
 * Resolves a requested Kubernetes version (`1.35.4`, `v1.35.4` or a minor, `1.35`) to one the test bed builds;
 * without a request, {@link KUBERNETES_VERSION_ENV}, then the default `CONTROL_PLANE_VERSIONS.kubernetes`.
 * @throws ConfigError naming the request, where it came from and the versions served.
 */
export function resolveKubernetesVersion(requested?: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env[KUBERNETES_VERSION_ENV] || undefined;
  const raw = requested ?? fromEnv ?? CONTROL_PLANE_VERSIONS.kubernetes;
  const want = raw.trim().replace(/^v/, '');
  const found = KUBERNETES_VERSIONS.find(
    (v) => v === `v${want}` || (/^1\.\d+$/.test(want) && v.startsWith(`v${want}.`)),
  );
  if (found) return found;
  const source = requested !== undefined ? '--kubernetes-version' : KUBERNETES_VERSION_ENV;
  throw new ConfigError(
    `${source} ${raw} is not a Kubernetes version the test bed builds: use one of ${KUBERNETES_VERSIONS.map((v) => v.slice(1)).join(', ')} (default ${CONTROL_PLANE_VERSIONS.kubernetes.slice(1)})`,
  );
}

/** kwok stages that make fake nodes Ready (with leases) and pods Ready/Completed/deleted, as kwokctl wires them. */
const KWOK_STAGES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'kustomize/stage/pod/fast/pod-ready.yaml',
  'kustomize/stage/pod/fast/pod-complete.yaml',
  'kustomize/stage/pod/fast/pod-delete.yaml',
] as const;

/** How upstream builds every k8s.io/kubernetes command (hack/lib/golang.sh): static, these tags, version stamps. */
export function kubeBuildFlags(v: string): Pick<GoBuildSpec, 'tags' | 'env' | 'ldflags' | 'versions'> {
  const [major, minor] = v.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  return {
    tags: ['selinux', 'notest', 'grpcnotrace'],
    env: { CGO_ENABLED: '0' },
    // The stamps make /version (and a node's kubeletVersion) truthful.
    ldflags: [
      `-X ${pkg}.gitVersion=${v}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
    ],
    versions: { kubernetes: v },
  };
}

function kubeSpec(v: string): GoBuildSpec {
  return {
    // The cache key covers the wrapper's go.mod, so one name serves every version.
    name: 'kube',
    usualSeconds: 750,
    moduleDir: join(goModulesDir, 'kube', v),
    packages: ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((c) => `k8s.io/kubernetes/cmd/${c}`),
    ...kubeBuildFlags(v),
  };
}

function etcdSpec(): GoBuildSpec {
  return {
    name: 'etcd',
    usualSeconds: 85,
    moduleDir: join(goModulesDir, 'etcd'),
    packages: ['go.etcd.io/etcd/server/v3'],
    outputNames: ['etcd'],
    env: { CGO_ENABLED: '0' },
    versions: { etcd: CONTROL_PLANE_VERSIONS.etcd },
  };
}

function kwokSpec(): GoBuildSpec {
  return {
    name: 'kwok',
    usualSeconds: 130,
    moduleDir: join(goModulesDir, 'kwok'),
    packages: ['sigs.k8s.io/kwok/cmd/kwok'],
    env: { CGO_ENABLED: '0' },
    versions: { kwok: CONTROL_PLANE_VERSIONS.kwok },
    // The stages ship in the same module zip the binary is built from; take them from there, not from our repo.
    afterBuild: async ({ outDir, goEnv }) => {
      const { stdout } = await execFileAsync('go', ['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'], {
        cwd: join(goModulesDir, 'kwok'),
        env: goEnv,
      });
      const moduleDir = stdout.trim();
      await mkdir(join(outDir, 'stages'), { recursive: true });
      const docs: string[] = [];
      for (const rel of KWOK_STAGES) {
        const file = join(moduleDir, rel);
        await copyFile(file, join(outDir, 'stages', rel.split('/').at(-1)!));
        docs.push((await readFile(file, 'utf8')).trim());
      }
      await writeFile(join(outDir, 'stages', 'all.yaml'), `${docs.join('\n---\n')}\n`);
    },
  };
}

/** Paths of every control-plane binary, and how they were built. */
export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly etcd: string;
  readonly kwok: string;
  /** Multi-document YAML of the kwok stages. */
  readonly kwokStages: string;
  readonly builds: readonly GoBuildResult[];
  /** The Kubernetes version of the kube-* binaries, `v1.MINOR.PATCH`. */
  readonly kubernetesVersion: string;
}

/** Options of {@link ensureControlPlaneBinaries}. */
export interface EnsureBinariesOptions {
  /** Cache root. @default `${cacheRoot()}/testenv/bin` */
  readonly cacheDir?: string;
  /** Progress lines for a terminal. */
  readonly onProgress?: (line: string) => void;
  /** Rebuild even when cached. @default false */
  readonly force?: boolean;
  /** Kubernetes version (`1.35.4`). @default `BATON_KUBERNETES_VERSION`, else {@link CONTROL_PLANE_VERSIONS} */
  readonly kubernetesVersion?: string;
}

const memo = new Map<string, Promise<ControlPlaneBinaries>>();

/**
 * Builds (once per pinned version set and Kubernetes version) or reuses kube-apiserver, kube-controller-manager, kube-scheduler,
 * etcd and kwok. Builds run one after another: each `go build` already uses every core.
 * @throws BuildError when Go is missing or a build fails.
 */
export async function ensureControlPlaneBinaries(options: EnsureBinariesOptions = {}): Promise<ControlPlaneBinaries> {
  const k = resolveKubernetesVersion(options.kubernetesVersion);
  const memoed = memo.get(k);
  if (!options.force && !options.cacheDir && memoed) return memoed;
  const run = (async () => {
    const cacheDir = options.cacheDir ?? join(cacheRoot(), 'testenv', 'bin');
    const opts = {
      cacheDir,
      force: options.force ?? false,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
    const kube = await ensureGoBuild(kubeSpec(k), opts);
    const etcd = await ensureGoBuild(etcdSpec(), opts);
    const kwok = await ensureGoBuild(kwokSpec(), opts);
    return {
      kubeApiserver: kube.binaries['kube-apiserver']!,
      kubeControllerManager: kube.binaries['kube-controller-manager']!,
      kubeScheduler: kube.binaries['kube-scheduler']!,
      etcd: etcd.binaries.etcd!,
      kwok: kwok.binaries.kwok!,
      kwokStages: join(kwok.dir, 'stages', 'all.yaml'),
      builds: [kube, etcd, kwok],
      kubernetesVersion: k,
    };
  })();
  if (!options.cacheDir) {
    memo.set(k, run);
    run.catch(() => {
      memo.delete(k);
    });
  }
  return run;
}
