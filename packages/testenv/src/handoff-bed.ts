import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HandoffPlanInput } from '@baton/core/plan';
import { ConfigError } from '@baton/errors';
import { BATON_SOURCE_URI, IMAGE_BUILDER_ID } from '@baton/image';
import { stringify } from 'yaml';
import { startCluster } from './cluster.js';
import { CONTROLLER_IMAGE, pinnedControllerImage, pushControllerImage } from './controller-image.js';
import { startDetachedCluster } from './detached.js';
import { type GitServer, startGitServer } from './git-server.js';
import { type BedImageTrust, writeBedImageTrust } from './image-trust.js';
import { MIRRORED_REGISTRIES } from './node/real-node.js';
import { type RealNodeInfo, realNodeInfo } from './real-node-info.js';
import { stopClusterByName } from './recorded-clusters.js';

/** Where the audit signing key and its trusted-keys file go; the caller writes them (testenv knows no audit format). */
export interface AuditKeyPaths {
  /** The plan's `audit.signingKeyPath`. */
  readonly signingKeyPath: string;
  /** The trusted-keys file `baton audit verify --keys` reads. */
  readonly keysPath: string;
}

/** Options of {@link startBatonControllerSide}. */
export interface StartBatonControllerSideOptions
  extends Pick<GitOpsSideOptions, 'pullPassword' | 'takeoverTimeoutSeconds'> {
  /** Admin kubeconfig of the cluster (the plan's `cluster.kubeconfig`). */
  readonly kubeconfigPath: string;
  /** The plan's `cluster.name`. @default 'e2e' */
  readonly clusterName?: string;
  /** The profile to push and commit: a directory of YAML files (bootstrap-manifests/baton-controller). */
  readonly profileDir: string;
  /** Directory for the plan, the push set, the credential files, the audit log and the journal. @default a new temp dir */
  readonly dir?: string;
  /** Writes a signing key and its trusted-keys file at these paths (e.g. with @baton/audit). */
  readonly writeAuditKeys: (paths: AuditKeyPaths) => Promise<void>;
  /**
   * The cluster's real node: the controller's Pod runs from the image the profile pins, pulled by that digest from
   * the bed's registry by kubelet, and the Git server is served at the node address. Required: nothing else runs
   * a Pod (a kwok node would leave the controller Pending forever).
   */
  readonly realNode: RealNodeInfo | null;
}

/** A Git repository holding baton-controller's profile, a plan that hands off to it, and its Pod running. */
export interface BatonControllerSide extends ControllerSide {
  /** `webhook.yaml` (secret), mode 0600. */
  readonly webhookSecretPath: string;
  /** The image reference the controller's pods run, pulled by its digest from the bed's local registry. */
  readonly controllerImage: string;
}

/** What a handoff to any controller needs: a Git repository holding what it pulls, a plan, and its pods running. */
export interface ControllerSide extends AuditKeyPaths, SideBase {
  /** The commit Git is at. */
  readonly revision: string;
  readonly planPath: string;
  /** The rendered push set (the profile pointing at this Git server). */
  readonly pushDir: string;
  /** The Git path the controller reconciles. */
  readonly gitPath: string;
  /** Files committed under the Git path, keyed by their path in Git. */
  readonly files: Readonly<Record<string, string>>;
  /** The images the bed's copy of the profile pins (repository → the reference with its local digest). */
  readonly images: Readonly<Record<string, string>>;
  /** `pull.yaml` (username, password), mode 0600. */
  readonly pullCredentialPath: string;
  /** Secret values written to the plan's files, so callers can assert they never reach an output. */
  readonly secretValues: readonly string[];
}

/**
 * Renders the profile for a fresh Git repository (the push points the GitSync at it, and Git carries the same files),
 * writes the pull credential and webhook key files, the audit keys (through the caller) and a plan, and pushes the
 * controller image the profile pins to the bed's registry (kubelet pulls it by that digest).
 * @throws ConfigError without a real node or when the profile pins another digest; else when the Git server cannot
 *   start (nothing is left running then).
 */
export function startBatonControllerSide(o: StartBatonControllerSideOptions): Promise<BatonControllerSide> {
  const realNode = requireRealNode(o.realNode, 'a baton-controller bed');
  return startSide(o.dir, 'baton-e2e-', realNode, async (dir, git) => {
    await git.createRepo('cluster-config');
    const url = git.repoUrl('cluster-config');
    const gitPath = 'clusters/demo';
    const pushDir = join(dir, 'push');
    const files: Record<string, string> = {};
    await mkdir(pushDir);
    for (const f of readdirSync(o.profileDir).filter((x) => x.endsWith('.yaml'))) {
      let text = readFileSync(join(o.profileDir, f), 'utf8');
      if (f.endsWith('gitsync.yaml'))
        text = text.replace(/url: .*/, `url: ${url}`).replace(/intervalSeconds: .*/, 'intervalSeconds: 5');
      writeFileSync(join(pushDir, f), text);
      files[`${gitPath}/baton-controller/${f}`] = text;
    }
    copyProfileRules(o.profileDir, pushDir);
    const revision = await git.commitFiles('cluster-config', files, 'baton-controller');
    const webhookKey = `whsec-${randomBytes(8).toString('hex')}`;
    const pullCredentialPath = writePullCredential(dir, {
      username: git.credentials.username,
      password: o.pullPassword ?? git.credentials.password,
    });
    const webhookSecretPath = join(dir, 'webhook.yaml');
    writeFileSync(webhookSecretPath, stringify({ secret: webhookKey }), { mode: 0o600 });
    const keys = await writeAuditKeyFiles(dir, o.writeAuditKeys);
    const planPath = join(dir, 'plan.yaml');
    // baton up verifies the pushed image's signature in the bed's registry, with the key the bed signs images with.
    const images = await writeBedImageTrust(dir, realNode.registryHost, MIRRORED_REGISTRIES);
    writeFileSync(
      planPath,
      stringify(planFor({ clusterName: o.clusterName ?? 'e2e', o, url, gitPath, revision, images })),
    );
    const controllerImage = await pushPinnedControllerImage(o.profileDir, realNode);
    return {
      controllerImage,
      images: { [CONTROLLER_IMAGE]: controllerImage },
      files,
      revision,
      planPath,
      pushDir,
      gitPath,
      pullCredentialPath,
      webhookSecretPath,
      ...keys,
      secretValues: [git.credentials.password, webhookKey, ...(o.pullPassword ? [o.pullPassword] : [])],
    };
  });
}

/**
 * Pushes the baton-controller image the profile pins to the bed's registry (which answers for ghcr.io by digest, so
 * kubelet pulls the pinned reference) and returns that reference.
 * @throws ConfigError when no manifest of the profile pins the image by digest, or pins another digest.
 */
async function pushPinnedControllerImage(profileDir: string, realNode: RealNodeInfo): Promise<string> {
  const pinned = readdirSync(profileDir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => ({
      path: join(profileDir, f),
      image: pinnedControllerImage(readFileSync(join(profileDir, f), 'utf8')),
    }))
    .find((f) => f.image);
  if (!pinned?.image)
    throw new ConfigError(
      `${profileDir}: no manifest pins ${CONTROLLER_IMAGE}@sha256:…; the test bed runs the image by its digest (\`pnpm image:build --pin\` pins it)`,
    );
  await pushControllerImage(pinned.path, realNode.pushImage);
  return pinned.image;
}

/**
 * The real node a controller side needs: its Pods are started by kubelet, and nothing else starts them.
 * @throws ConfigError naming the bed and the fix.
 */
export function requireRealNode(realNode: RealNodeInfo | null | undefined, what: string): RealNodeInfo {
  if (!realNode)
    throw new ConfigError(
      `${what} needs a real node (its controller runs as a Pod that kubelet starts): start the cluster with node: 'real' (\`--node real\`), not a kwok node`,
    );
  return realNode;
}

/** What a side of a GitOps controller built from Go modules (Flux, Argo CD) is started with, whatever the controller. */
export interface GitOpsSideOptions {
  /** Admin kubeconfig of the cluster (the plan's `cluster.kubeconfig`). */
  readonly kubeconfigPath: string;
  /** The plan's `cluster.name`. @default 'e2e' */
  readonly clusterName?: string;
  /** bootstrap-manifests/<profile>: the install set, `rules/profile.yaml` and `example/` (what Git carries besides). */
  readonly profileDir: string;
  /** Progress lines of the controller's build (elapsed time against its usual duration). */
  readonly onBuildProgress?: (line: string) => void;
  /** Directory for the plan, the push set, the credential files, the audit log and the journal. @default a new temp dir */
  readonly dir?: string;
  /** Writes a signing key and its trusted-keys file at these paths (e.g. with @baton/audit). */
  readonly writeAuditKeys: (paths: AuditKeyPaths) => Promise<void>;
  /** The password the push hands the controller for Git. @default the Git server's (a wrong one: it never syncs) */
  readonly pullPassword?: string;
  /** `takeover.timeoutSeconds` of the plan. @default the side's */
  readonly takeoverTimeoutSeconds?: number;
  /**
   * What the controller may apply from Git: the profile's scoped reconciler role, or upstream's cluster-admin (the
   * profile's `options/` binding pushed too, and the plan's `controller.privilege` says so). @default 'scoped'
   */
  readonly privilege?: 'scoped' | 'cluster-admin';
}

/** What every controller side has besides its own parts: its directory, its Git server, the audit log and journal. */
export interface SideBase {
  readonly dir: string;
  readonly git: GitServer;
  readonly auditLogPath: string;
  readonly journalDir: string;
  /** Stops the Git server; removes `dir` unless `keepFiles`. */
  stop(options?: { readonly keepFiles?: boolean }): Promise<void>;
}

/**
 * Creates the side's directory (`dirOption` or a new temp dir) and its Git server in the bed (at the node address),
 * then `build`s the rest; when `build` throws, the Git server stops and the directory goes.
 */
export async function startSide<T extends object>(
  dirOption: string | undefined,
  tmpPrefix: string,
  realNode: RealNodeInfo,
  build: (dir: string, git: GitServer) => Promise<T>,
): Promise<T & SideBase> {
  const dir = dirOption ?? mkdtempSync(join(tmpdir(), tmpPrefix));
  const git = await startGitServer({ inBed: realNode });
  try {
    await mkdir(dir, { recursive: true });
    const side = await build(dir, git);
    return {
      ...side,
      dir,
      git,
      auditLogPath: join(dir, 'audit', 'handoff.log'),
      journalDir: join(dir, 'journal'),
      async stop(options = {}) {
        await git.stop();
        if (!options.keepFiles) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await git.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Copies the profile's rules (`rules/profile.yaml`: takeover rules and the plan's controller block) into the push set,
 * where core finds them; the push reads only the top level as manifests.
 */
export function copyProfileRules(profileDir: string, pushDir: string): void {
  mkdirSync(join(pushDir, 'rules'), { recursive: true });
  cpSync(join(profileDir, 'rules', 'profile.yaml'), join(pushDir, 'rules', 'profile.yaml'));
}

/** Writes `pull.yaml` (username, password; mode 0600) in `dir`: the plan's pull.credential.fromFile. */
export function writePullCredential(dir: string, c: { readonly username: string; readonly password: string }): string {
  const path = join(dir, 'pull.yaml');
  writeFileSync(path, stringify({ username: c.username, password: c.password }), { mode: 0o600 });
  return path;
}

/** Has the caller write the audit signing key and its trusted-keys file under `dir/audit`. */
export async function writeAuditKeyFiles(
  dir: string,
  write: (paths: AuditKeyPaths) => Promise<void>,
): Promise<AuditKeyPaths> {
  await mkdir(join(dir, 'audit'), { recursive: true });
  const keys = { signingKeyPath: join(dir, 'audit', 'signing.key'), keysPath: join(dir, 'audit', 'keys.yaml') };
  await write(keys);
  return keys;
}

/**
 * The HandoffPlan (baton.dev/v1alpha1) to baton-controller; relative paths are relative to the plan file. The controller
 * block and the pull Secret's name come from the profile the push set carries (`push/rules/profile.yaml`).
 */
function planFor(p: {
  clusterName: string;
  o: StartBatonControllerSideOptions;
  url: string;
  gitPath: string;
  revision: string;
  images: BedImageTrust;
}): HandoffPlanInput {
  return {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    cluster: { name: p.clusterName, kubeconfig: p.o.kubeconfigPath },
    push: {
      credential: 'bootstrap-token',
      profile: 'baton-controller',
      manifests: './push',
      budgetSeconds: 300,
      secrets: [{ name: 'baton-webhook', fromFile: './webhook.yaml' }],
      // The controller image is signed with the bed's key and carries its SLSA provenance, as a release's does.
      images: {
        trustedKeys: './image-keys.yaml',
        provenance: { builders: [IMAGE_BUILDER_ID], sources: [BATON_SOURCE_URI] },
        mirrors: p.images.mirrors,
      },
    },
    pull: {
      credential: { fromFile: './pull.yaml' },
      source: { url: p.url, ref: 'main', path: p.gitPath, revision: p.revision },
    },
    takeover: { timeoutSeconds: p.o.takeoverTimeoutSeconds ?? 150 },
    audit: { logPath: './audit/handoff.log', signingKeyPath: './audit/signing.key' },
    journalDir: './journal',
  };
}

/** Options of {@link startHandoffBed}. */
export interface StartHandoffBedOptions
  extends StartBedClusterOptions,
    Omit<StartBatonControllerSideOptions, 'kubeconfigPath' | 'clusterName' | 'realNode'> {}

/** A fresh local cluster with a controller side ({@link BatonControllerSide} by default): what a handoff needs. */
export interface HandoffBed<
  S extends { stop(options?: { readonly keepFiles?: boolean }): Promise<void> } = BatonControllerSide,
> {
  readonly clusterName: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly apiserverAuditLogPath: string | null;
  /** The bed's real node (its containers' processes can be read from /proc); null on kwok nodes or held by a host. */
  readonly realNode: RealNodeInfo | null;
  readonly side: S;
  /**
   * Stops the Git server; stops the cluster unless `keepCluster`; removes the side's files
   * unless `keepFiles` (default: kept when the cluster is).
   */
  stop(options?: { readonly keepCluster?: boolean; readonly keepFiles?: boolean }): Promise<void>;
}

/** Options of {@link startBedCluster}. */
export interface StartBedClusterOptions {
  /** Cluster name. @default a generated one */
  readonly name?: string;
  /** @default 1 */
  readonly nodes?: number;
  /**
   * Run the cluster, and its node, in a background host that outlives this process (`pnpm baton testenv down` stops
   * it); the side still runs here and reaches the node by its coordinates. @default false
   */
  readonly detached?: boolean;
  /** Kubernetes version (`1.35.4`). @default `BATON_KUBERNETES_VERSION`, else `CONTROL_PLANE_VERSIONS.kubernetes` */
  readonly kubernetesVersion?: string;
  /**
   * `real`: one real node in the bed's own network namespace (see `startCluster`); `kwok` only for a cluster with no
   * controller side (a side refuses it). @default 'real'
   */
  readonly node?: 'kwok' | 'real';
}

/** A local cluster, in this process or detached, with one way to stop it. */
export interface BedCluster {
  readonly name: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath: string | null;
  /** The real node, when the cluster has one. */
  readonly realNode: RealNodeInfo | null;
  stop(): Promise<void>;
}

/**
 * Starts a real local cluster in this process ({@link startCluster}) or in a detached host ({@link startDetachedCluster}).
 * @throws when a component does not become ready.
 */
export async function startBedCluster(o: StartBedClusterOptions = {}): Promise<BedCluster> {
  const common = {
    ...(o.name ? { name: o.name } : {}),
    ...(o.kubernetesVersion ? { kubernetesVersion: o.kubernetesVersion } : {}),
    nodes: o.nodes ?? 1,
  };
  if (o.detached) {
    // The host owns the cluster and its node; the side runs in this process and reaches the node by its coordinates.
    const c = await startDetachedCluster({ ...common, keep: true, ...(o.node ? { node: o.node } : {}) });
    return {
      name: c.name,
      server: c.server,
      kubeconfigPath: c.kubeconfigPath,
      auditLogPath: c.auditLogPath,
      realNode: c.realNode ? realNodeInfo(c.realNode) : null,
      stop: async () => {
        await stopClusterByName(c.name);
      },
    };
  }
  const c = await startCluster({ ...common, ...(o.node ? { node: o.node } : {}) });
  return {
    name: c.name,
    server: c.server,
    kubeconfigPath: c.kubeconfigPath,
    auditLogPath: c.auditLogPath,
    realNode: c.realNode,
    stop: () => c.stop(),
  };
}

/**
 * Starts a real local cluster ({@link startBedCluster}) and {@link startBatonControllerSide} for it.
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export function startHandoffBed(o: StartHandoffBedOptions): Promise<HandoffBed> {
  const { name, nodes, detached, kubernetesVersion, node, ...sideOptions } = o;
  return startBedWith({ name, nodes, detached, kubernetesVersion, node: node ?? 'real' }, (cluster) =>
    startBatonControllerSide({
      ...sideOptions,
      kubeconfigPath: cluster.kubeconfigPath,
      clusterName: cluster.name,
      realNode: cluster.realNode,
    }),
  );
}

/**
 * Starts a real local cluster and a controller side for it (`startSide`).
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export async function startBedWith<S extends { stop(options?: { readonly keepFiles?: boolean }): Promise<void> }>(
  o: { readonly [K in keyof StartBedClusterOptions]?: StartBedClusterOptions[K] | undefined },
  startSide: (cluster: BedCluster) => Promise<S>,
): Promise<HandoffBed<S>> {
  if (o.node === 'kwok') requireRealNode(null, 'a handoff bed');
  const cluster = await startBedCluster({
    ...(o.name ? { name: o.name } : {}),
    ...(o.nodes ? { nodes: o.nodes } : {}),
    ...(o.detached ? { detached: o.detached } : {}),
    ...(o.kubernetesVersion ? { kubernetesVersion: o.kubernetesVersion } : {}),
    ...(o.node ? { node: o.node } : {}),
  });
  let side: S;
  try {
    side = await startSide(cluster);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return {
    clusterName: cluster.name,
    server: cluster.server,
    kubeconfigPath: cluster.kubeconfigPath,
    apiserverAuditLogPath: cluster.auditLogPath,
    realNode: cluster.realNode,
    side,
    async stop(options = {}) {
      await side.stop({ keepFiles: options.keepFiles ?? options.keepCluster === true });
      if (!options.keepCluster) await cluster.stop();
    },
  };
}
