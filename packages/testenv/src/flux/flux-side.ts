import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { HandoffPlanInput } from '@baton/core/plan';
import { stringify } from 'yaml';
import {
  type ControllerSide,
  copyProfileRules,
  type GitOpsSideOptions,
  requireRealNode,
  startSide,
  writeAuditKeyFiles,
  writePullCredential,
} from '../gitops-side.js';
import { type BedCluster, type HandoffBed, type StartBedClusterOptions, startBedWith } from '../handoff-bed.js';
import { type BedImageTrust, writeBedImageTrust } from '../image-trust.js';
import { MIRRORED_REGISTRIES } from '../node/real-node.js';
import { pinBedImages } from '../pin-bed-images.js';
import type { RealNodeInfo } from '../real-node-info.js';
import { ensureFluxControllers, type FluxControllers } from './flux-controllers.js';
import { FLUX_RELEASE_IDENTITY, pushFluxImages } from './flux-images.js';

const REPO = 'cluster-config';
const CLUSTER_ADMIN_OPTION = join('options', 'cluster-admin-reconciler.yaml');
const GIT_PATH = 'clusters/demo';
/**
 * Files of the install that Git carries too (what `flux bootstrap` commits), so Flux applies and owns them. The CRDs
 * and RBAC stay push-only: the scoped `flux-reconciler` role cannot apply them (the profile lists them).
 */
const IN_GIT = [
  '00-namespace.yaml',
  '10-serviceaccounts.yaml',
  '30-deployments.yaml',
  '35-service.yaml',
  '40-sync.yaml',
];

/** Options of {@link startFluxSide}. */
export interface StartFluxSideOptions extends GitOpsSideOptions {
  /**
   * The cluster's real node: Flux's controllers run there as containers from images built here (pushed to the bed's
   * registry, pinned by digest in the bed's copy of the profile). Required.
   */
  readonly realNode: RealNodeInfo | null;
  /** The binaries. @default {@link ensureFluxControllers}() (builds them on a cold machine: minutes) */
  readonly controllers?: FluxControllers;
  /** GitRepository and Kustomization intervals (upstream: 1m0s and 10m0s). @default '5s' and '10s' */
  readonly intervals?: { readonly source?: string; readonly kustomization?: string };
}

/** A Git repository holding Flux's install and the example apps, a plan that hands off to Flux, and Flux's pods. */
export interface FluxSide extends ControllerSide {}

/**
 * Renders bootstrap-manifests/flux for a fresh Git repository (the GitRepository points at it), commits Flux's install
 * (without CRDs and RBAC) and the example apps under `clusters/demo`, writes the pull credential, the audit keys
 * (through the caller) and a plan with `push.profile: flux`, after pushing Flux's images to the bed's registry (kubelet
 * runs the pods).
 * @throws ConfigError without a real node; else when the Git server cannot start (nothing is left running then).
 */
export async function startFluxSide(o: StartFluxSideOptions): Promise<FluxSide> {
  const realNode = requireRealNode(o.realNode, 'a Flux bed');
  const controllers =
    o.controllers ?? (await ensureFluxControllers(o.onBuildProgress ? { onProgress: o.onBuildProgress } : {}));
  return startSide(o.dir, 'baton-flux-', realNode, async (dir, git) => {
    const images = await pushFluxImages(controllers, realNode);
    await git.createRepo(REPO);
    const url = git.repoUrl(REPO);
    const pushDir = join(dir, 'push');
    await mkdir(pushDir, { recursive: true });
    const files: Record<string, string> = {};
    for (const f of readdirSync(o.profileDir).filter((x) => x.endsWith('.yaml'))) {
      const text = pinBedImages(render(f, readFileSync(join(o.profileDir, f), 'utf8'), url, o.intervals), images);
      writeFileSync(join(pushDir, f), text);
      if (IN_GIT.includes(f)) files[`${GIT_PATH}/flux-system/${f}`] = text;
    }
    if (!existsSync(join(pushDir, '05-crds.generated.yaml')))
      cpSync(controllers.crdsPath, join(pushDir, '05-crds.yaml'));
    copyProfileRules(o.profileDir, pushDir);
    if (o.privilege === 'cluster-admin')
      cpSync(join(o.profileDir, CLUSTER_ADMIN_OPTION), join(pushDir, '26-cluster-admin-reconciler.yaml'));
    const example = join(o.profileDir, 'example', GIT_PATH);
    for (const f of readdirSync(example)) files[`${GIT_PATH}/${f}`] = readFileSync(join(example, f), 'utf8');
    const revision = await git.commitFiles(REPO, files, 'flux install and example apps');
    const pullCredentialPath = writePullCredential(dir, {
      username: git.credentials.username,
      password: o.pullPassword ?? git.credentials.password,
    });
    const keys = await writeAuditKeyFiles(dir, o.writeAuditKeys);
    const planPath = join(dir, 'plan.yaml');
    // baton up verifies the images' signatures in the bed's registry, with the key the bed signs images with.
    const imageTrust = await writeBedImageTrust(dir, realNode.registryHost, MIRRORED_REGISTRIES);
    writeFileSync(
      planPath,
      stringify(
        fluxPlan(o.clusterName ?? 'e2e', o.kubeconfigPath, url, revision, {
          imageTrust,
          timeoutSeconds: o.takeoverTimeoutSeconds ?? 150,
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
      secretValues: [git.credentials.password, ...(o.pullPassword ? [o.pullPassword] : [])],
      images,
    };
  });
}

/** One file of the install for this cluster: the GitRepository at our Git server, both intervals short. */
function render(file: string, text: string, url: string, intervals: StartFluxSideOptions['intervals']): string {
  if (file !== '40-sync.yaml') return text;
  const [source, kustomization] = text.split(/^---$/m);
  return [
    source!.replace(/^( {2}url: ).*$/m, `$1${url}`).replace(/^( {2}interval: ).*$/m, `$1${intervals?.source ?? '5s'}`),
    kustomization!.replace(/^( {2}interval: ).*$/m, `$1${intervals?.kustomization ?? '10s'}`),
  ].join('---');
}

/** The HandoffPlan (baton.dev/v1alpha1) to Flux; relative paths are relative to the plan file. */
function fluxPlan(
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
      profile: 'flux',
      manifests: './push',
      budgetSeconds: 300,
      // Keyless, as Flux's own images are signed: the bed's private Sigstore stands for the public one.
      images: {
        keyless: { trustedRoot: './sigstore-root.json', identities: [FLUX_RELEASE_IDENTITY] },
        mirrors: o.imageTrust.mirrors,
      },
    },
    pull: {
      credential: { fromFile: './pull.yaml' },
      source: { url, ref: 'main', path: GIT_PATH, revision },
    },
    // The rest of the controller block (kustomize-controller, its status object and field manager) is the profile's.
    controller: { privilege: o.privilege },
    takeover: { timeoutSeconds: o.timeoutSeconds },
    audit: { logPath: './audit/handoff.log', signingKeyPath: './audit/signing.key' },
    journalDir: './journal',
  };
}

/** Options of {@link startFluxBed}. */
export interface StartFluxBedOptions
  extends StartBedClusterOptions,
    Omit<StartFluxSideOptions, 'kubeconfigPath' | 'clusterName' | 'realNode'> {}

/**
 * A fresh local cluster with {@link FluxSide}: everything a handoff to real Flux needs.
 * @throws when the cluster or the side cannot start; what started is stopped again.
 */
export function startFluxBed(o: StartFluxBedOptions): Promise<HandoffBed<FluxSide>> {
  const { name, nodes, detached, kubernetesVersion, node, ...sideOptions } = o;
  return startBedWith({ name, nodes, detached, kubernetesVersion, node: node ?? 'real' }, (cluster: BedCluster) =>
    startFluxSide({
      ...sideOptions,
      kubeconfigPath: cluster.kubeconfigPath,
      clusterName: cluster.name,
      realNode: cluster.realNode,
    }),
  );
}
