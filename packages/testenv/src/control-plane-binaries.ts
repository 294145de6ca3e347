import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureGoBuild, type GoBuildResult, type GoBuildSpec } from './go-build.js';
import { cacheRoot, goModulesDir } from './paths.js';

const execFileAsync = promisify(execFile);

/** The pinned versions of the local control plane. Changing one rebuilds exactly what depends on it. */
export const CONTROL_PLANE_VERSIONS = {
  kubernetes: 'v1.36.3',
  etcd: 'v3.6.16',
  kwok: 'v0.8.0',
} as const;

/** kwok stages that make fake nodes Ready (with leases) and pods Ready/Completed/deleted, as kwokctl wires them. */
const KWOK_STAGES = [
  'kustomize/stage/node/fast/node-initialize.yaml',
  'kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'kustomize/stage/pod/fast/pod-ready.yaml',
  'kustomize/stage/pod/fast/pod-complete.yaml',
  'kustomize/stage/pod/fast/pod-delete.yaml',
] as const;

function kubeSpec(): GoBuildSpec {
  const v = CONTROL_PLANE_VERSIONS.kubernetes;
  const [major, minor] = v.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  return {
    name: 'kube',
    usualSeconds: 750,
    moduleDir: join(goModulesDir, 'kube'),
    packages: ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((c) => `k8s.io/kubernetes/cmd/${c}`),
    // Upstream builds these static and with these tags (hack/lib/golang.sh); the stamps make /version truthful.
    tags: ['selinux', 'notest', 'grpcnotrace'],
    env: { CGO_ENABLED: '0' },
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
}

/** Options of {@link ensureControlPlaneBinaries}. */
export interface EnsureBinariesOptions {
  /** Cache root. @default `${cacheRoot()}/testenv/bin` */
  readonly cacheDir?: string;
  /** Progress lines for a terminal. */
  readonly onProgress?: (line: string) => void;
  /** Rebuild even when cached. @default false */
  readonly force?: boolean;
}

let memo: Promise<ControlPlaneBinaries> | undefined;

/**
 * Builds (once per pinned version set) or reuses kube-apiserver, kube-controller-manager, kube-scheduler,
 * etcd and kwok. Builds run one after another: each `go build` already uses every core.
 * @throws BuildError when Go is missing or a build fails.
 */
export async function ensureControlPlaneBinaries(options: EnsureBinariesOptions = {}): Promise<ControlPlaneBinaries> {
  if (!options.force && !options.cacheDir && memo) return memo;
  const run = (async () => {
    const cacheDir = options.cacheDir ?? join(cacheRoot(), 'testenv', 'bin');
    const opts = {
      cacheDir,
      force: options.force ?? false,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
    const kube = await ensureGoBuild(kubeSpec(), opts);
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
    };
  })();
  if (!options.cacheDir) {
    memo = run;
    run.catch(() => {
      memo = undefined;
    });
  }
  return run;
}
