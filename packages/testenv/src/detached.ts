import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { BatonError, ConfigError, ProcessError } from '@baton/errors';
import type { RealNodeCoordinates } from './real-node-info.js';

/** What a detached cluster reports once it is ready. */
export interface DetachedCluster {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath: string | null;
  /** Pid of the background host process that owns the cluster. */
  readonly hostPid: number;
  /** The cluster's real node, when it has one (without a bed: a caller's side pushes images and serves Git there). */
  readonly realNode?: RealNodeCoordinates;
  /** The handoff bed the host runs for the cluster, when asked for one. */
  readonly bed?: DetachedBed;
}

/** Where a detached handoff bed keeps what `baton up --plan` needs, for a person to follow by hand. */
export interface DetachedBed {
  readonly profile: 'baton-controller' | 'flux';
  /** The bed's directory: plan, push set, pull credential, audit log and keys, journal. */
  readonly dir: string;
  /** A HandoffPlan that hands the cluster off as it stands. */
  readonly planPath: string;
  /** The repository the controller pulls (served by `git http-backend` on loopback). */
  readonly gitUrl: string;
  readonly gitPath: string;
  /** The commit the plan declares. */
  readonly revision: string;
  /** The rendered push set, as Git carries it. */
  readonly pushDir: string;
  /** The read-only pull credential (YAML: username, password). */
  readonly pullCredentialPath: string;
  readonly auditLogPath: string;
  readonly signingKeyPath: string;
  /** The trusted-keys file for `baton audit verify --keys`. */
  readonly keysPath: string;
  /** The controller image the node runs by digest (baton-controller), else null. */
  readonly controllerImage: string | null;
}

/**
 * Starts a cluster in a background host process that outlives the caller (for `baton testenv up`),
 * waits until it is ready and returns its coordinates. Stop it with {@link stopClusterByName}.
 * @throws ConfigError / ProcessError / TimeoutError as reported by the host.
 */
export async function startDetachedCluster(
  options: {
    name?: string;
    nodes?: number;
    keep?: boolean;
    kubernetesVersion?: string;
    /** `real` or `kwok` nodes (see `startCluster`). @default the host's: real */
    node?: 'real' | 'kwok';
    /** Also run a handoff bed for this profile, from the bootstrap manifests in `manifests`. */
    bed?: { readonly profile: DetachedBed['profile']; readonly manifests: string };
  } = {},
): Promise<DetachedCluster> {
  // Run the host the same way this module runs: from source (tsx + condition) or from dist.
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  const script = fileURLToPath(new URL(`./host${ext}`, import.meta.url));
  const execArgv = ext === '.ts' ? ['--conditions=@baton/source', '--import', 'tsx'] : [];
  const args = [
    ...execArgv,
    script,
    ...(options.name ? [`--name=${options.name}`] : []),
    `--nodes=${options.nodes ?? 1}`,
    ...(options.node ? [`--node=${options.node}`] : []),
    ...(options.keep ? ['--keep=true'] : []),
    ...(options.kubernetesVersion ? [`--kubernetes-version=${options.kubernetesVersion}`] : []),
    ...(options.bed ? [`--bed=${options.bed.profile}`, `--manifests=${options.bed.manifests}`] : []),
  ];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string | undefined>((resolve) => {
    lines.once('line', resolve);
    child.once('exit', () => resolve(undefined));
  });
  lines.close();
  child.stdout!.destroy();
  child.unref();
  if (!first)
    throw new ProcessError(
      `the background host of the cluster exited before it was ready (\`${process.execPath} ${args.join(' ')}\`); run \`baton testenv build\`, then try again`,
    );
  const msg = JSON.parse(first) as { ok: boolean; code?: string; message?: string } & Omit<DetachedCluster, 'hostPid'>;
  if (!msg.ok) {
    if (msg.code === 'config') throw new ConfigError(msg.message ?? 'invalid options');
    throw new BatonError((msg.code as never) ?? 'internal', msg.message ?? 'the cluster did not start');
  }
  return {
    name: msg.name,
    server: msg.server,
    kubeconfigPath: msg.kubeconfigPath,
    auditLogPath: msg.auditLogPath,
    hostPid: child.pid!,
    ...(msg.realNode ? { realNode: msg.realNode } : {}),
    ...(msg.bed ? { bed: msg.bed } : {}),
  };
}
