import { GITHUB_ACTIONS_ISSUER, signBedImages, signKeylessInRegistry } from '../image-trust.js';
import { binaryImageLayout } from '../node/binary-image.js';
import type { RealNodeInfo } from '../real-node-info.js';
import type { FluxControllers } from './flux-controllers.js';

/** Flux's controller images as the profile names them (bootstrap-manifests/flux pins upstream's tags and digests). */
export const FLUX_IMAGES = {
  sourceController: 'ghcr.io/fluxcd/source-controller',
  kustomizeController: 'ghcr.io/fluxcd/kustomize-controller',
} as const;

/**
 * The keyless identity Flux's images are signed as in the bed: the release workflow of each controller's repository at
 * its tag, as GitHub Actions names it. {@link FLUX_RELEASE_IDENTITY} matches every one.
 */
export function fluxReleaseSigner(repository: string, tag: string): { issuer: string; subject: string } {
  return {
    issuer: GITHUB_ACTIONS_ISSUER,
    subject: `https://github.com/${repository}/.github/workflows/release.yml@refs/tags/${tag}`,
  };
}

/** The identity a plan trusting Flux's releases names: any fluxcd repository's release workflow, at a version tag. */
export const FLUX_RELEASE_IDENTITY = {
  issuer: GITHUB_ACTIONS_ISSUER,
  subjectRegExp: String.raw`https://github\.com/fluxcd/[a-z0-9-]+/\.github/workflows/release\.yml@refs/tags/v[0-9]+\.[0-9]+\.[0-9]+`,
} as const;

/**
 * Flux's two controllers as OCI images built here from the binaries testenv builds from the same modules (upstream's
 * images cannot be pulled here), run as 65534 as upstream's are, pushed to a bed's registry under upstream's names.
 * @returns for each upstream image name, the reference the bed's copy of the profile pins instead: same name and
 *   tag, this build's digest.
 */
export async function pushFluxImages(
  controllers: FluxControllers,
  realNode: RealNodeInfo,
): Promise<Readonly<Record<string, string>>> {
  const images = [
    {
      name: FLUX_IMAGES.sourceController,
      binary: controllers.sourceController,
      tag: controllers.versions.sourceController,
    },
    {
      name: FLUX_IMAGES.kustomizeController,
      binary: controllers.kustomizeController,
      tag: controllers.versions.kustomizeController,
    },
  ];
  const pins: Record<string, string> = {};
  for (const i of images) {
    const layout = await binaryImageLayout({
      binary: i.binary,
      ref: i.tag,
      user: '65534:65534',
      // Go's user lookups and kustomize's plugin home want a HOME; /tmp is the controllers' writable emptyDir.
      env: ['HOME=/tmp'],
      createdBy: `baton testenv: ${i.name} ${i.tag} built from its Go module`,
    });
    // Signed as a release signs its images: the bed's plans trust the bed's key, so baton up verifies them.
    await signBedImages(layout, i.name);
    const repository = i.name.slice('ghcr.io/'.length);
    const digest = await realNode.pushImage(layout, repository, i.tag);
    // And keylessly, as Flux's release workflow signs upstream's: the bed's Flux plans trust that identity only.
    // source-controller's in cosign v2's format (the `.sig` tag), kustomize-controller's as a cosign v3 bundle, so
    // every Flux handoff verifies both forms upstream images carry.
    const format = i.name === FLUX_IMAGES.sourceController ? 'cosign-v2' : 'bundle';
    await signKeylessInRegistry(
      realNode.registryHost,
      repository,
      digest,
      i.name,
      fluxReleaseSigner(repository, i.tag),
      format,
    );
    pins[i.name] = `${i.name}:${i.tag}@${digest}`;
  }
  return pins;
}
