import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { HandoffPlanInput } from '@baton/core/plan';
import { parseAllDocuments, stringify } from 'yaml';
import {
  type ControllerSide,
  type GitOpsSideOptions,
  requireRealNode,
  startSide,
  writeAuditKeyFiles,
} from '../gitops-side.js';
import { type BedCluster, type HandoffBed, type StartBedClusterOptions, startBedWith } from '../handoff-bed.js';
import { type BedImageTrust, writeBedImageTrust } from '../image-trust.js';
import { MIRRORED_REGISTRIES } from '../node/real-node.js';
import { pinBedImages } from '../pin-bed-images.js';
import type { RealNodeInfo } from '../real-node-info.js';
import { ARGOCD_PUSH_SECRETS, ARGOCD_REPO_SECRET, type ArgoCd, ensureArgoCd } from './argocd-build.js';
import { ARGOCD_IMAGES, ARGOCD_REDIS_UNSIGNED, pushArgoCdImages } from './argocd-images.js';

export { ARGOCD_REPO_SECRET } from './argocd-build.js';

const REPO = 'cluster-config';
const CLUSTER_ADMIN_OPTION = join('options', 'cluster-admin-controller.yaml');
const GIT_PATH = 'clusters/demo';
/**
 * Files of the install that Git carries too (what argocd-autopilot commits), so Argo CD applies and owns them. The
 * CRDs and RBAC stay push-only: the scoped `argocd-reconciler` role cannot apply them (the profile lists them).
 */
const IN_GIT = [
  '00-namespace.yaml',
  '10-serviceaccounts.yaml',
  '30-configmaps.yaml',
  '35-services.yaml',
  '40-workloads.yaml',
  '50-root.yaml',
];

/** Options of {@link startArgoCdSide}. */
export interface StartArgoCdSideOptions extends GitOpsSideOptions {
  /** The binary. @default {@link ensureArgoCd}() (builds it on a cold machine: 7 to 12 minutes) */
  readonly argocd?: ArgoCd;
  /**
   * The cluster's real node: Argo CD's application controller, repo-server and redis run there as containers from
   * images built here (pushed to the bed's registry, pinned by digest in the bed's copy of the profile), reaching each
   * other through their Services. Required.
   */
  readonly realNode: RealNodeInfo | null;
  /**
   * How often the application controller refreshes each Application and how long the repo-server caches a branch's
   * commit (upstream: 120 s and 3 min, both from `ARGOCD_RECONCILIATION_TIMEOUT`): short, so a commit is seen within
   * seconds, as Flux's 5 s interval is in the test bed. @default 5
   */
  readonly appResyncSeconds?: number;
}

/** A Git repository holding Argo CD's install and the example apps, a plan that hands off to Argo CD, and its pods. */
export interface ArgoCdSide extends ControllerSide {}

/**
 * Renders bootstrap-manifests/argocd for a fresh Git repository (the root Application points at it), commits Argo
 * CD's install (without CRDs and RBAC) and the example apps under `clusters/demo`, writes the repository credential
 * (labelled for Argo CD), `argocd-secret` and `argocd-redis` as plan files, the audit keys (through the caller) and a
 * plan with `push.profile: argocd`, after pushing Argo CD's images to the bed's registry (kubelet runs the pods).
 * @throws ConfigError without a real node; else when the Git server cannot start (nothing is left running then).
 */
export async function startArgoCdSide(o: StartArgoCdSideOptions): Promise<ArgoCdSide> {
  const realNode = requireRealNode(o.realNode, 'an Argo CD bed');
  const argocd = o.argocd ?? (await ensureArgoCd(o.onBuildProgress ? { onProgress: o.onBuildProgress } : {}));
  return startSide(o.dir, 'baton-argocd-', realNode, async (dir, git) => {
    const images = await pushArgoCdImages(argocd, realNode);
    await git.createRepo(REPO);
    const url = git.repoUrl(REPO);
    const pushDir = join(dir, 'push');
    const files = await renderPushAndGit(o, argocd, url, pushDir, images);
    const revision = await git.commitFiles(REPO, files, 'argocd install and example apps');
    const password = o.pullPassword ?? git.credentials.password;
    const redisPassword = randomBytes(16).toString('hex');
    const serverKey = randomBytes(32).toString('base64');
    const secretFile = (name: string, data: Record<string, string>) => {
      const path = join(dir, `${name}.yaml`);
      writeFileSync(path, stringify(data), { mode: 0o600 });
      return path;
    };
    const pullCredentialPath = secretFile('pull', { type: 'git', url, username: git.credentials.username, password });
    secretFile('argocd-redis', { auth: redisPassword });
    secretFile('argocd-secret', { 'server.secretkey': serverKey });
    const keys = await writeAuditKeyFiles(dir, o.writeAuditKeys);
    const planPath = join(dir, 'plan.yaml');
    // baton up verifies the images' signatures in the bed's registry, with the key the bed signs images with.
    const imageTrust = await writeBedImageTrust(dir, realNode.registryHost, MIRRORED_REGISTRIES);
    writeFileSync(
      planPath,
      stringify(
        argoCdPlan(o.clusterName ?? 'e2e', o.kubeconfigPath, url, revision, {
          imageTrust,
          timeoutSeconds: o.takeoverTimeoutSeconds ?? 180,
          privilege: o.privilege ?? 'scoped',
        }),
      ),
    );
    return {
      revision,
      planPath,
      pushDir,
      gitPath: GIT_PATH,
      files,
      pullCredentialPath,
      ...keys,
      secretValues: [git.credentials.password, redisPassword, serverKey, ...(o.pullPassword ? [o.pullPassword] : [])],
      images,
    };
  });
}

/**
 * Writes the push set into `pushDir` and returns what Git carries, by path: the install files Argo CD owns after the
 * takeover, the example apps, and with cluster-admin the rest of upstream's install.
 */
async function renderPushAndGit(
  o: StartArgoCdSideOptions,
  argocd: ArgoCd,
  url: string,
  pushDir: string,
  images: Readonly<Record<string, string>>,
): Promise<Record<string, string>> {
  await mkdir(join(pushDir, 'rules'), { recursive: true });
  const files: Record<string, string> = {};
  const clusterAdmin = o.privilege === 'cluster-admin';
  for (const f of readdirSync(o.profileDir).filter((x) => x.endsWith('.yaml'))) {
    const raw = readFileSync(join(o.profileDir, f), 'utf8');
    let text = raw;
    if (f === '50-root.yaml') text = renderRoot(raw, url);
    else if (f === '30-configmaps.yaml' && clusterAdmin) text = withoutInclusions(raw);
    else if (f === '40-workloads.yaml') text = withResync(pinBedImages(raw, images), o.appResyncSeconds ?? 5);
    writeFileSync(join(pushDir, f), text);
    if (IN_GIT.includes(f)) files[`${GIT_PATH}/argocd/${f}`] = text;
  }
  if (!existsSync(join(pushDir, '05-crds.generated.yaml'))) cpSync(argocd.crdsPath, join(pushDir, '05-crds.yaml'));
  cpSync(join(o.profileDir, 'rules', 'profile.yaml'), join(pushDir, 'rules', 'profile.yaml'));
  if (clusterAdmin) {
    cpSync(join(o.profileDir, CLUSTER_ADMIN_OPTION), join(pushDir, '26-cluster-admin-controller.yaml'));
    // Git carries the rest of upstream's install too, as argocd-autopilot commits it.
    const rest = readFileSync(argocd.restPath, 'utf8');
    files[`${GIT_PATH}/argocd-rest/install.yaml`] = withoutUnbuiltPrograms(rest);
  }
  const example = join(o.profileDir, 'example', GIT_PATH);
  for (const sub of readdirSync(example))
    for (const f of readdirSync(join(example, sub)))
      files[`${GIT_PATH}/${sub}/${f}`] = readFileSync(join(example, sub, f), 'utf8');
  return files;
}

/**
 * Upstream's rest of the install with its Deployments at `replicas: 0`: the API server, notifications and the
 * ApplicationSet controller are not linked into the bed's slim build and dex's image is not built here, so on a real
 * node their pods could never start. Argo CD still applies and owns them from Git (what the cluster-admin test
 * proves), and a Deployment of no replicas is Healthy.
 */
function withoutUnbuiltPrograms(text: string): string {
  const header = text.slice(0, text.search(/^[^#]/m));
  const docs = parseAllDocuments(text).map((d) => d.toJS() as { kind?: string; spec?: { replicas?: number } } | null);
  for (const o of docs) if (o?.kind === 'Deployment' && o.spec) o.spec.replicas = 0;
  return `${header}${docs
    .filter((o) => o !== null)
    .map((o) => stringify(o))
    .join('---\n')}`;
}

/**
 * `argocd-cm` without `resource.inclusions`: a cluster-admin Argo CD sees every kind (the option file's comment says
 * so), else it would refuse the RBAC, Secrets and NetworkPolicies of its own install as excluded.
 */
function withoutInclusions(text: string): string {
  return text.replace(/^ {2}resource\.inclusions: \|\n(?: {4}.*\n)+/m, '');
}

/**
 * The workloads with `ARGOCD_RECONCILIATION_TIMEOUT` set on Argo CD's two programs (the application controller's
 * `--app-resync` and the repo-server's `--revision-cache-expiration` both default to it). The same text goes to
 * the push and to Git, so the takeover finds no difference to apply.
 */
function withResync(text: string, seconds: number): string {
  const env = `            - name: ARGOCD_RECONCILIATION_TIMEOUT\n              value: "${seconds}s"\n`;
  const out = text.replace(
    /^( {10}args: \[\/usr\/local\/bin\/argocd-(?:application-controller|repo-server)\]\n {10}env:\n)/gm,
    `$1${env}`,
  );
  if (out.split('ARGOCD_RECONCILIATION_TIMEOUT').length !== 3)
    throw new Error('40-workloads.yaml: expected the application controller and the repo-server, each with `env:`');
  return out;
}

/** The root Application pointing at this Git server. */
function renderRoot(text: string, url: string): string {
  return text.replace(/^( {4}repoURL: ).*$/m, `$1${url}`);
}

/** The HandoffPlan (baton.dev/v1alpha1) to Argo CD; relative paths are relative to the plan file. */
function argoCdPlan(
  clusterName: string,
  kubeconfigPath: string,
  url: string,
  revision: string,
  o: {
    readonly timeoutSeconds: number;
    readonly privilege: 'scoped' | 'cluster-admin';
    readonly imageTrust: BedImageTrust;
  },
): HandoffPlanInput {
  return {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    cluster: { name: clusterName, kubeconfig: kubeconfigPath },
    push: {
      credential: 'bootstrap-token',
      profile: 'argocd',
      manifests: './push',
      budgetSeconds: 300,
      secrets: ARGOCD_PUSH_SECRETS.map((name) => ({ name, fromFile: `./${name}.yaml` })),
      images: {
        trustedKeys: './image-keys.yaml',
        rules: [{ images: [ARGOCD_IMAGES.redis], unsigned: ARGOCD_REDIS_UNSIGNED }],
        mirrors: o.imageTrust.mirrors,
      },
    },
    pull: {
      credential: {
        secretName: ARGOCD_REPO_SECRET,
        fromFile: './pull.yaml',
        labels: { 'argocd.argoproj.io/secret-type': 'repository' },
      },
      source: { url, ref: 'main', path: GIT_PATH, revision },
    },
    controller: {
      name: 'argocd-application-controller',
      namespace: 'argocd',
      serviceAccount: 'argocd-application-controller',
      fieldManager: 'argocd-controller',
      privilege: o.privilege,
      status: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        name: 'root',
        revisionPath: 'status.sync.revision',
      },
    },
    takeover: { timeoutSeconds: o.timeoutSeconds },
    audit: { logPath: './audit/handoff.log', signingKeyPath: './audit/signing.key' },
    journalDir: './journal',
  };
}

/** Options of {@link startArgoCdBed}. */
export interface StartArgoCdBedOptions
  extends StartBedClusterOptions,
    Omit<StartArgoCdSideOptions, 'kubeconfigPath' | 'clusterName' | 'realNode'> {}

/**
 * A fresh local cluster with {@link ArgoCdSide}: everything a handoff to real Argo CD needs.
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export function startArgoCdBed(o: StartArgoCdBedOptions): Promise<HandoffBed<ArgoCdSide>> {
  const { name, nodes, detached, kubernetesVersion, node, ...sideOptions } = o;
  return startBedWith({ name, nodes, detached, kubernetesVersion, node: node ?? 'real' }, (cluster: BedCluster) =>
    startArgoCdSide({
      ...sideOptions,
      kubeconfigPath: cluster.kubeconfigPath,
      clusterName: cluster.name,
      realNode: cluster.realNode,
    }),
  );
}
