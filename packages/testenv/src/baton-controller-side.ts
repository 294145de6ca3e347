// baton-controller's side of a bed: its profile rendered for a fresh Git repository and committed there, a typed
// plan that hands off to it, and the image the profile pins pushed to the bed's registry.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { HandoffPlanInput } from '@baton/core/plan';
import { ConfigError } from '@baton/errors';
import { BATON_SOURCE_URI, IMAGE_BUILDER_ID } from '@baton/image';
import { stringify } from 'yaml';
import { CONTROLLER_IMAGE, pinnedControllerImage, pushControllerImage } from './controller-image.js';
import {
  type AuditKeyPaths,
  type ControllerSide,
  copyProfileRules,
  type GitOpsSideOptions,
  requireRealNode,
  startSide,
  writeAuditKeyFiles,
  writePullCredential,
} from './gitops-side.js';
import { type BedImageTrust, writeBedImageTrust } from './image-trust.js';
import { MIRRORED_REGISTRIES } from './node/real-node.js';
import type { RealNodeInfo } from './real-node-info.js';

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
