import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessError } from '@baton/errors';
import { parse } from 'yaml';
import { imagePodCommand } from './image-pod.js';
import { ImagePullError, type PulledImage, parseDigestReference, pullImage } from './image-pull.js';
import { KubeHttp } from './kube-http.js';
import { ManagedProcess } from './managed-process.js';
import { cacheRoot } from './paths.js';

/** Options of {@link startPodRunner}. */
export interface StartPodRunnerOptions {
  /** Admin kubeconfig of the cluster (client certificate), as `startCluster` writes it. */
  readonly kubeconfigPath: string;
  /** Runs the containers whose image starts with this, e.g. `ghcr.io/baton-dev/baton-controller`. */
  readonly imagePrefix: string;
  /**
   * Of those pods, runs only the ones this accepts (e.g. by name, where one image serves several programs and only
   * some have a local stand-in); the others are left to kwok. @default every pod
   */
  readonly podFilter?: (pod: { readonly namespace: string; readonly name: string }) => boolean;
  /**
   * Executable and leading arguments of the local stand-in for the image; the container's `args`
   * follow, then `--kubeconfig`, `--identity`, `--port=0` and `--work-dir`.
   * @default the controller's `src/main.ts` under tsx with the `@baton/source` condition
   */
  readonly command?: readonly string[];
  /** Working directory of the processes. @default the repository root */
  readonly cwd?: string;
  /** How often pods are listed. @default 500 */
  readonly pollMs?: number;
  /**
   * What the process gets after its container's args and env, in place of what a kubelet gives a pod (the mounted
   * token, its ports, its volumes). Called at every start, so ports can be fresh.
   * @default the baton controller's: `--kubeconfig`, `--identity`, `--port=0`, `--work-dir`
   */
  readonly localProcess?: (pod: LocalPod) => Promise<LocalPodProcess> | LocalPodProcess;
  /**
   * Run the pod's image itself, pulled by digest, instead of `command`: registry hosts of image references mapped to
   * local registries (e.g. `{ 'ghcr.io': '127.0.0.1:5000' }`, see `startRegistry`). The image runs in its own mount
   * and PID namespaces on the host's network with its read-only root, its user, the container's args and env, the
   * pod's ServiceAccount files and emptyDirs; `localProcess` then adds only args and env (default: `--port=0`, so
   * that pods sharing the host's network do not collide on the controller's port). An image the registry does not
   * have leaves the pod `ErrImagePull`, as a kubelet would.
   */
  readonly registryMirrors?: Readonly<Record<string, string>>;
}

/*
 * Env `secretKeyRef`s are resolved from the pod's namespace as a kubelet resolves them: a Secret or key that is not
 * there (and not `optional: true`) leaves the pod Pending with its container `CreateContainerConfigError`, retried
 * until it appears. A push that forgets a Secret its workloads read then fails here as it would on a real node.
 */

/** A pod about to run as a local process: what {@link StartPodRunnerOptions.localProcess} may use. */
export interface LocalPod {
  readonly namespace: string;
  readonly name: string;
  /** Kubeconfig with the pod's bound ServiceAccount token (a token file that is rewritten as it rotates). */
  readonly kubeconfigPath: string;
  /** An empty directory of the pod's own (its emptyDir volumes), removed when the pod goes away. */
  readonly workDir: string;
}

/** Arguments and environment a pod's local process gets beyond its container's. */
export interface LocalPodProcess {
  /** Appended after the container's args (for Go flag parsers the last value of a repeated flag wins). */
  readonly args: readonly string[];
  /** Added to the container's env. */
  readonly env?: Readonly<Record<string, string>>;
}

/** One pod that runs as a local process. */
export interface RunningPod {
  readonly namespace: string;
  readonly name: string;
  readonly pid: number;
  /** stdout and stderr of the process. */
  readonly logPath: string;
  /** How many times the process was restarted after exiting (restartPolicy Always). */
  readonly restarts: number;
}

/** A running {@link startPodRunner}. */
export interface PodRunner {
  /** Pods that currently have a process, by `namespace/name`. */
  pods(): RunningPod[];
  /** Stops every process (SIGTERM, then SIGKILL) and the watch loop. */
  stop(): Promise<void>;
}

const REPO_ROOT = new URL('../../../', import.meta.url).pathname;
const DEFAULT_COMMAND = [
  process.execPath,
  '--conditions=@baton/source',
  '--import',
  'tsx',
  join(REPO_ROOT, 'packages/controller/src/main.ts'),
];

interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    nodeName?: string;
    serviceAccountName?: string;
    containers: PodContainer[];
    volumes?: { name: string; emptyDir?: object }[];
    securityContext?: { runAsUser?: number; runAsGroup?: number };
  };
  status?: { phase?: string };
}

interface PodContainer {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: { runAsUser?: number; runAsGroup?: number };
  env?: {
    name: string;
    value?: string;
    valueFrom?: {
      fieldRef?: { fieldPath: string };
      secretKeyRef?: { name: string; key: string; optional?: boolean };
    };
  }[];
}

interface Entry {
  proc: ManagedProcess;
  pod: Pod;
  restarts: number;
  dir: string;
  nextStartMs: number;
  startedAt: string;
}

/** baton-controller's flags for its identity, ports and work directory. */
const controllerProcess = (p: LocalPod): LocalPodProcess => ({
  args: [`--kubeconfig=${p.kubeconfigPath}`, `--identity=${p.name}`, '--port=0', `--work-dir=${p.workDir}`],
});

/** An image's process shares the host's network: a fresh port for the controller's health, metrics and webhook. */
const imageProcess = (): LocalPodProcess => ({ args: ['--port=0'] });

/** A container env var's value: a literal, or a fieldRef into the pod's metadata (what the kubelet resolves). */
function envValue(pod: Pod, e: NonNullable<PodContainer['env']>[number]): string | undefined {
  if (e.value !== undefined) return e.value;
  const path = e.valueFrom?.fieldRef?.fieldPath;
  if (!path) return undefined;
  const m = /^metadata\.(annotations|labels)\['(.+)'\]$/.exec(path);
  if (m) return pod.metadata[m[1] as 'annotations' | 'labels']?.[m[2]!];
  if (path === 'metadata.name') return pod.metadata.name;
  if (path === 'metadata.namespace') return pod.metadata.namespace;
  if (path === 'metadata.uid') return pod.metadata.uid;
  return undefined;
}

/**
 * Acts as the kubelet for one image on kwok nodes, which run no containers: when a pod with a
 * matching container is Running on a node, it starts the image's local stand-in as a process in
 * its own process group, authenticated with a TokenRequest token bound to that pod for the pod's
 * ServiceAccount (exactly its in-cluster identity); when the pod goes away, it stops the process.
 * Processes get `BATON_OWNER_PID` so they exit if this process dies without stopping them.
 * @throws ProcessError when the admin kubeconfig cannot be read.
 */
export async function startPodRunner(options: StartPodRunnerOptions): Promise<PodRunner> {
  let http: KubeHttp;
  try {
    http = await KubeHttp.fromKubeconfig(options.kubeconfigPath);
  } catch (err) {
    throw new ProcessError(`pod runner: cannot read kubeconfig ${options.kubeconfigPath}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const kc = parse(await readFile(options.kubeconfigPath, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
  };
  const kubelet = new LocalKubelet(options, http, {
    server: kc.clusters[0]?.cluster.server ?? '',
    caData: kc.clusters[0]?.cluster['certificate-authority-data'] ?? '',
    baseDir: await mkdtemp(join(tmpdir(), 'baton-pods-')),
  });
  let stopped = false;
  let busy: Promise<void> = Promise.resolve();
  const loop = (async () => {
    while (!stopped) {
      busy = kubelet.tick().catch(() => undefined);
      await busy;
      await new Promise((r) => setTimeout(r, options.pollMs ?? 500));
    }
  })();

  return {
    pods: () => kubelet.pods(),
    async stop() {
      stopped = true;
      await busy;
      await loop;
      await kubelet.stopAll();
      http.close();
    },
  };
}

/** Where the pods' processes reach the cluster, and where their files go. */
interface KubeletSite {
  readonly server: string;
  /** Base64 PEM of the cluster CA. */
  readonly caData: string;
  /** One `<namespace>_<name>` folder a pod: token, kubeconfig, log, work dir. */
  readonly baseDir: string;
}

/** The pod runner's state: one process a matching pod, brought in line with the pod list on each tick. */
class LocalKubelet {
  private readonly entries = new Map<string, Entry>();
  /** Pods (by uid) whose image could not be pulled: they stay ErrImagePull. */
  private readonly pullFailed = new Set<string>();
  /** Pods (by uid) waiting in CreateContainerConfigError, with the message last reported: retried every tick. */
  private readonly configErrors = new Map<string, string>();
  constructor(
    private readonly options: StartPodRunnerOptions,
    private readonly http: KubeHttp,
    private readonly site: KubeletSite,
  ) {}

  pods(): RunningPod[] {
    return [...this.entries.values()].map((e) => ({
      namespace: e.pod.metadata.namespace,
      name: e.pod.metadata.name,
      pid: e.proc.pid,
      logPath: join(e.dir, 'log'),
      restarts: e.restarts,
    }));
  }

  /** One pass: stop processes whose pod is gone, restart or report exited ones, start new ones. */
  async tick(): Promise<void> {
    const res = await this.http.request('GET', '/api/v1/pods');
    if (res.status !== 200) return;
    const want = new Map(
      (res.body as { items: Pod[] }).items
        .filter((p) => this.isRunningHere(p))
        .map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]),
    );
    for (const [key, e] of this.entries) await this.settle(key, e, want.get(key));
    for (const [key, pod] of want) if (!this.entries.has(key)) await this.startPod(key, pod, 0);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.proc.stop()));
    this.entries.clear();
    await rm(this.site.baseDir, { recursive: true, force: true });
  }

  /** A live pod scheduled to a node with a container of our image. */
  private isRunningHere(p: Pod): boolean {
    return (
      Boolean(p.spec.nodeName) &&
      (p.status?.phase === 'Running' || this.configErrors.has(p.metadata.uid)) &&
      !p.metadata.deletionTimestamp &&
      this.containerOf(p) !== undefined &&
      (this.options.podFilter?.(p.metadata) ?? true)
    );
  }

  private containerOf(pod: Pod): PodContainer | undefined {
    return pod.spec.containers.find((c) => c.image.startsWith(this.options.imagePrefix));
  }

  /** Brings one process in line with its pod (`undefined`: the pod is gone). */
  private async settle(key: string, e: Entry, pod: Pod | undefined): Promise<void> {
    if (!pod || pod.metadata.uid !== e.pod.metadata.uid) {
      this.configErrors.delete(e.pod.metadata.uid);
      this.entries.delete(key);
      await e.proc.stop();
      await rm(e.dir, { recursive: true, force: true });
    } else if (!e.proc.isRunning && performance.now() >= e.nextStartMs) {
      // restartPolicy Always, with a pause so a crashing binary is not a hot loop.
      if (e.nextStartMs === 0) e.nextStartMs = performance.now() + 2_000;
      else {
        this.entries.delete(key);
        await this.startPod(key, pod, e.restarts + 1);
      }
    }
  }

  private async startPod(key: string, pod: Pod, restarts: number): Promise<void> {
    const container = this.containerOf(pod);
    if (!container || this.pullFailed.has(pod.metadata.uid)) return;
    const secretEnv = await this.secretEnv(pod, container);
    if (typeof secretEnv === 'string') {
      if (this.configErrors.get(pod.metadata.uid) !== secretEnv)
        await this.reportWaiting(pod, container, 'CreateContainerConfigError', secretEnv);
      this.configErrors.set(pod.metadata.uid, secretEnv);
      return;
    }
    const token = await this.mintPodToken(pod);
    if (!token) return;
    const dir = join(this.site.baseDir, `${pod.metadata.namespace}_${pod.metadata.name}`);
    await mkdir(join(dir, 'work'), { recursive: true });
    const podEnv = { ...containerEnv(pod, container), ...secretEnv };
    const spec = this.options.registryMirrors
      ? await this.imageSpec(pod, container, token, dir, podEnv, this.options.registryMirrors)
      : await this.localSpec(pod, container, token, dir, podEnv);
    if (!spec) return;
    const proc = await ManagedProcess.start({
      name: `pod ${key}`,
      logPath: join(dir, 'log'),
      cwd: this.options.cwd ?? REPO_ROOT,
      ...spec,
    });
    const startedAt = new Date().toISOString();
    this.entries.set(key, { proc, pod, restarts, dir, nextStartMs: 0, startedAt });
    // kwok set the pod Running once; after a config error only the "kubelet" can say the container now runs.
    if (this.configErrors.delete(pod.metadata.uid)) await this.reportRunning(pod, container, startedAt);
  }

  /**
   * The values of the container's env `secretKeyRef`s, read from the pod's namespace; the kubelet's message when a
   * Secret or key is missing and the reference is not optional.
   */
  private async secretEnv(pod: Pod, container: PodContainer): Promise<Record<string, string> | string> {
    const values: Record<string, string> = {};
    const read = new Map<string, Record<string, string> | undefined>();
    for (const e of container.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref) continue;
      if (!read.has(ref.name)) {
        const res = await this.http.request(
          'GET',
          `/api/v1/namespaces/${pod.metadata.namespace}/secrets/${encodeURIComponent(ref.name)}`,
        );
        if (res.status !== 200 && res.status !== 404) return `failed to read secret "${ref.name}": HTTP ${res.status}`;
        read.set(
          ref.name,
          res.status === 200 ? ((res.body as { data?: Record<string, string> }).data ?? {}) : undefined,
        );
      }
      const data = read.get(ref.name);
      const value = data?.[ref.key];
      if (value !== undefined) values[e.name] = Buffer.from(value, 'base64').toString('utf8');
      else if (ref.optional) continue;
      else if (!data) return `secret "${ref.name}" not found`;
      else return `couldn't find key ${ref.key} in Secret ${pod.metadata.namespace}/${ref.name}`;
    }
    return values;
  }

  /** The pod Running and Ready with its container started, as a kubelet reports it once the container runs. */
  private async reportRunning(pod: Pod, container: PodContainer, startedAt: string): Promise<void> {
    await this.patchStatus(pod, {
      phase: 'Running',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: startedAt },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: startedAt },
      ],
      containerStatuses: [
        { ...(notReadyContainer(container, { running: { startedAt } }) as object), ready: true, started: true },
      ],
    });
  }

  /** A merge patch of the pod's status, as the kubelet writes it. */
  private async patchStatus(pod: Pod, status: unknown): Promise<number> {
    const res = await this.http.request(
      'PATCH',
      `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/status`,
      { status },
      undefined,
      'application/merge-patch+json',
    );
    return res.status;
  }

  /** The from-source stand-in: `command` with the container's args, a kubeconfig, and the host's environment. */
  private async localSpec(
    pod: Pod,
    container: PodContainer,
    token: string,
    dir: string,
    podEnv: Record<string, string>,
  ): Promise<{ command: string; args: string[]; env: NodeJS.ProcessEnv }> {
    await writeFile(join(dir, 'token'), token, { mode: 0o600 });
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, this.podKubeconfig(dir), { mode: 0o600 });
    const [cmd, ...lead] = this.options.command ?? DEFAULT_COMMAND;
    const local = await (this.options.localProcess ?? controllerProcess)({
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      kubeconfigPath: kubeconfig,
      workDir: join(dir, 'work'),
    });
    return {
      command: cmd!,
      args: [...lead, ...(container.args ?? []).map((a) => expandVars(a, podEnv)), ...local.args],
      env: {
        ...process.env,
        ...podEnv,
        ...local.env,
        POD_NAME: pod.metadata.name,
        POD_NAMESPACE: pod.metadata.namespace,
        BATON_OWNER_PID: String(process.pid),
      },
    };
  }

  /**
   * The image itself, pulled by digest from the mapped registry; undefined when the pull fails, after the pod's
   * container status says `ErrImagePull` with the reason.
   */
  private async imageSpec(
    pod: Pod,
    container: PodContainer,
    token: string,
    dir: string,
    podEnv: Record<string, string>,
    mirrors: Readonly<Record<string, string>>,
  ): Promise<{ command: string; args: string[]; env: Record<string, string> } | undefined> {
    let image: PulledImage;
    try {
      const ref = parseDigestReference(container.image);
      const registry = ref ? mirrors[ref.host] : undefined;
      if (!ref || !registry)
        throw new ImagePullError(
          `failed to pull image "${container.image}": the test bed pulls only by digest (@sha256:…) from ${Object.keys(mirrors).join(', ')}`,
        );
      image = await pullImage({ ...ref, registry, cacheDir: join(cacheRoot(), 'image', 'rootfs') });
    } catch (err) {
      if (!(err instanceof ImagePullError)) throw err;
      this.pullFailed.add(pod.metadata.uid);
      await this.reportWaiting(pod, container, err.reason, err.message);
      return undefined;
    }
    const local = await (this.options.localProcess ?? imageProcess)({
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      kubeconfigPath: '',
      workDir: join(dir, 'work'),
    });
    const sc = { ...pod.spec.securityContext, ...container.securityContext };
    const volumes = new Set((pod.spec.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
    const args = container.command === undefined ? (container.args ?? image.config.Cmd ?? []) : (container.args ?? []);
    return imagePodCommand({
      image,
      dir,
      namespace: pod.metadata.namespace,
      token,
      caPem: Buffer.from(this.site.caData, 'base64').toString(),
      server: new URL(this.site.server),
      ...(container.command ? { command: container.command.map((a) => expandVars(a, podEnv)) } : {}),
      args: [...args.map((a) => expandVars(a, podEnv)), ...local.args],
      env: { ...podEnv, ...local.env },
      emptyDirs: (container.volumeMounts ?? []).filter((m) => volumes.has(m.name)).map((m) => m.mountPath),
      user: {
        ...(sc.runAsUser !== undefined ? { uid: sc.runAsUser } : {}),
        ...(sc.runAsGroup !== undefined ? { gid: sc.runAsGroup } : {}),
      },
      ownerPid: process.pid,
    });
  }

  /** The pod stays Pending with its container waiting, as a kubelet reports a failed pull or a config error. */
  private async reportWaiting(pod: Pod, container: PodContainer, reason: string, message: string): Promise<void> {
    const at = new Date().toISOString();
    await this.patchStatus(pod, {
      phase: 'Pending',
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: at },
        { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: at },
      ],
      containerStatuses: [notReadyContainer(container, { waiting: { reason, message } })],
    });
  }

  /** A token of the pod's ServiceAccount bound to the pod, as the kubelet projects it; undefined when refused. */
  private async mintPodToken(pod: Pod): Promise<string | undefined> {
    const sa = pod.spec.serviceAccountName ?? 'default';
    const tr = await this.http.request(
      'POST',
      `/api/v1/namespaces/${pod.metadata.namespace}/serviceaccounts/${sa}/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          expirationSeconds: 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid },
        },
      },
    );
    const token = (tr.body as { status?: { token?: string } }).status?.token;
    return tr.status === 201 ? token : undefined;
  }

  private podKubeconfig(dir: string): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: this.site.server, 'certificate-authority-data': this.site.caData } }],
      // The pod re-reads its token file as it rotates.
      users: [{ name: 'u', user: { tokenFile: join(dir, 'token') } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    });
  }
}

/** The container's env: literal values and the fieldRefs the kubelet resolves; unresolvable ones are left out. */
function containerEnv(pod: Pod, container: PodContainer): Record<string, string> {
  return Object.fromEntries(
    (container.env ?? []).flatMap((e) => {
      const v = envValue(pod, e);
      return v === undefined ? [] : [[e.name, v]];
    }),
  );
}

/**
 * The kubelet's expansion of `$(VAR)` in a container's args from its env: `$$` escapes a dollar, and an unknown
 * variable stays as written (Kubernetes' `expansion.Expand`).
 */
export function expandVars(arg: string, env: Readonly<Record<string, string>>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (whole, name: string | undefined) => {
    if (name === undefined) return '$';
    return env[name] ?? whole;
  });
}

/** A container status that is not ready, in `state` (waiting or terminated). */
function notReadyContainer(container: PodContainer, state: unknown): unknown {
  return {
    name: container.name,
    image: container.image,
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
    state,
  };
}
