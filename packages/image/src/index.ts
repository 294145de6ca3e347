export { DEFAULT_CACHE_DIR, fetchDeb, fetchNodeTarball, type ImageLock, type LockedDeb, readLock } from './inputs.js';
export {
  appFilesLayer,
  blobPath,
  debianLayer,
  filesLayer,
  IMAGE_USER,
  type ImageUser,
  type Layer,
  type LayerOptions,
  nodeLayer,
  putBlob,
} from './layers.js';
export { closure, IMAGE_LOCKS, lockDebs } from './lock-debs.js';
export { type Bundle, buildNodeAppImage, bundleEntry, type NodeAppImage } from './node-app.js';
export {
  type Descriptor,
  extendImage,
  type ImageRuntime,
  imageManifest,
  MEDIA_TYPE,
  manifestBlobs,
  type ReferrerOptions,
  referrerManifest,
  writeLayout,
} from './oci.js';
export {
  BATON_SOURCE_URI,
  type BuildSource,
  gitBuildSource,
  IMAGE_BUILD_TYPE,
  IMAGE_BUILDER_ID,
  imageProvenance,
  SLSA_PROVENANCE_PREDICATE_TYPE,
} from './provenance.js';
export { lockedPackages, type SbomPackage, spdxDocument } from './sbom.js';
export {
  PROVENANCE_ANNOTATIONS,
  SIGNATURE_ANNOTATIONS,
  type SignedImage,
  type SignLayoutOptions,
  signLayout,
} from './sign-layout.js';
export { byteOrder, type TarEntry, treeEntries, writeTar } from './tar.js';
