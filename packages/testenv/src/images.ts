// @baton/testenv/images: the bed's OCI registry, baton's images built and signed here, and the keys and local Sigstore
// that sign them.
export {
  buildCliImage,
  buildControllerImage,
  CLI_IMAGE,
  CLI_IMAGE_LAYOUT,
  CONTROLLER_IMAGE,
  CONTROLLER_IMAGE_LAYOUT,
  pushCliImage,
  pushControllerImage,
  pushShardImage,
  SHARD_IMAGE,
} from './controller-image.js';
export {
  BED_IMAGE_KEY_NAME,
  type BedImageTrust,
  bedImageKey,
  bedImageKeyPath,
  bedSigstore,
  GITHUB_ACTIONS_ISSUER,
  signBedImages,
  signKeylessInRegistry,
  writeBedImageTrust,
} from './image-trust.js';
export type { KeylessSigner, KeylessSignOptions, LocalSigstore } from './local-sigstore.js';
export { createLocalSigstore, TRUSTED_ROOT_MEDIA_TYPE } from './local-sigstore.js';
export { pinBedImages } from './pin-bed-images.js';
export type { LocalRegistry, RegistryAuth, StartRegistryOptions } from './registry.js';
export { attachToRegistry, putCosignV2Signature, startRegistry } from './registry.js';
export type { TestImage } from './test-image.js';
export { writeTestImage } from './test-image.js';
