import type { HandoffPlan } from '../handoff-plan.js';
import type { Logger } from '../logger.js';
import type { ManifestSet } from '../manifest-set.js';
import { podImages } from './pod-images.js';
import { RegistryClient } from './registry-client.js';
import { dockerConfigCredentials } from './registry-credentials.js';
import { imageTrustPolicy } from './trust-policy.js';
import { type UnsignedImage, type VerifiedImage, verifyImages } from './verify-images.js';

/** How a run's images were checked, as the audit event records it. */
export interface ImageCheck {
  /**
   * `verified`: every image is signed by a key or keyless identity of the policy, or let through unsigned by one of
   * its rules; `skipped`: --insecure-skip-image-verify; `no-policy`: neither the plan nor the profile names keys, so
   * nothing could be verified.
   */
  readonly verification: 'verified' | 'skipped' | 'no-policy';
  /** Every image the push set's pods run. */
  readonly images: readonly string[];
  readonly verified: readonly VerifiedImage[];
  /** Images a rule of the policy lets through unsigned, each with its digest and the rule's reason. */
  readonly unsigned?: readonly UnsignedImage[];
  /** Where the keys came from. */
  readonly policy?: string;
}

/** Options of {@link checkImages}. */
export interface CheckImagesOptions {
  /** `--insecure-skip-image-verify`: push without verifying (loud, and recorded). */
  readonly skipVerify?: boolean;
  /** @default a client with the plan's push.images.mirrors, and the logins of its Docker config */
  readonly registry?: RegistryClient;
}

/**
 * Verifies the images of the push set against the plan's (or profile's) trust policy, before anything is minted.
 * Skipping, or having no policy, is logged as a warning and returned, for the audit event to say.
 * @throws {ImageVerifyError} naming the first image that fails.
 * @throws {ConfigError} when the plan's trusted-keys file cannot be read.
 */
export async function checkImages(
  plan: HandoffPlan,
  set: ManifestSet,
  log: Logger,
  options: CheckImagesOptions = {},
): Promise<ImageCheck> {
  const images = podImages(set.objects.map((m) => m.object));
  if (options.skipVerify) {
    log.warn({ images }, '--insecure-skip-image-verify: the images are pushed unverified (the audit event says so)');
    return { verification: 'skipped', images, verified: [] };
  }
  const policy = await imageTrustPolicy(plan, set.profile);
  if (!policy) {
    log.warn(
      { images },
      `images not verified: profile ${plan.push.profile} declares no imageTrust and the plan names no push.images.trustedKeys or keyless`,
    );
    return { verification: 'no-policy', images, verified: [] };
  }
  const { mirrors, credentials: file } = plan.push.images;
  const registry =
    options.registry ?? new RegistryClient({ mirrors, credentials: dockerConfigCredentials(file ? { file } : {}) });
  const { verified, unsigned } = await verifyImages(images, policy, registry);
  log.info({ policy: policy.source, verified: verified.map((v) => `${v.image} ${v.signedBy}`) }, 'images verified');
  for (const u of unsigned)
    log.warn({ image: u.image, rule: u.rule }, `image pushed unsigned, as ${u.rule} allows: ${u.reason}`);
  return {
    verification: 'verified',
    images,
    verified,
    ...(unsigned.length > 0 ? { unsigned } : {}),
    policy: policy.source,
  };
}
