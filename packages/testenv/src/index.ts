export type { ApiserverAuditEvent, IdentityActivity } from './apiserver-audit.js';
export { apiserverRequestsBy, identityActivity } from './apiserver-audit.js';
// --- Argo CD, built on demand (issue 19) ---
export type { ArgoCd, EnsureArgoCdOptions } from './argocd/argocd-build.js';
export { ARGOCD_GO_TOOLCHAIN, ARGOCD_VERSION, ensureArgoCd } from './argocd/argocd-build.js';
export type { BedImage } from './argocd/argocd-images.js';
export { ARGOCD_IMAGES, ARGOCD_REDIS_UNSIGNED, buildArgoCdImages } from './argocd/argocd-images.js';
export type { ArgoCdSide, StartArgoCdBedOptions, StartArgoCdSideOptions } from './argocd/argocd-side.js';
export { ARGOCD_REPO_SECRET, startArgoCdBed, startArgoCdSide } from './argocd/argocd-side.js';
export type { BatonControllerSide, StartBatonControllerSideOptions } from './baton-controller-side.js';
export { startBatonControllerSide } from './baton-controller-side.js';
export type { Cluster, StartClusterOptions } from './cluster.js';
export { startCluster, stopAll } from './cluster.js';
export { type ClusterState, clustersDir } from './cluster-dir.js';
export type { ControlPlaneBinaries, EnsureBinariesOptions } from './control-plane-binaries.js';
export {
  CONTROL_PLANE_VERSIONS,
  ensureControlPlaneBinaries,
  KUBERNETES_VERSION_ENV,
  KUBERNETES_VERSIONS,
  resolveKubernetesVersion,
} from './control-plane-binaries.js';
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
export type { DetachedBed, DetachedCluster } from './detached.js';
export { startDetachedCluster } from './detached.js';
// --- Flux's controllers, built on demand (issue 13) ---
export type { EnsureFluxControllersOptions, FluxControllers } from './flux/flux-controllers.js';
export { ensureFluxControllers, FLUX_VERSIONS } from './flux/flux-controllers.js';
export { FLUX_IMAGES, FLUX_RELEASE_IDENTITY, fluxReleaseSigner, pushFluxImages } from './flux/flux-images.js';
export type { FluxSide, StartFluxBedOptions, StartFluxSideOptions } from './flux/flux-side.js';
export { startFluxBed, startFluxSide } from './flux/flux-side.js';
export type { GitServer, GitServerUser, StartGitServerOptions } from './git-server.js';
export { startGitServer } from './git-server.js';
export type { AuditKeyPaths, ControllerSide, GitOpsSideOptions, SideBase } from './gitops-side.js';
export type { EnsureGoBuildOptions, GoBuildResult, GoBuildSpec } from './go-build.js';
export { ensureGoBuild, goVersion } from './go-build.js';
export type { BedCluster, HandoffBed, StartBedClusterOptions, StartHandoffBedOptions } from './handoff-bed.js';
export { startBedCluster, startHandoffBed } from './handoff-bed.js';
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
// --- A real node: kubelet, containerd, kube-proxy, CoreDNS in the bed's network namespace (issue 26) ---
export type { BedNetwork, LinkableBed } from './node/bed-network.js';
export { createBedNetwork, linkBeds, removeBedNetwork } from './node/bed-network.js';
export type { EnsureNodeBinariesOptions, NodeBinaries } from './node/node-binaries.js';
export {
  COREDNS_VERSION,
  ensureNodeBinaries,
  NODE_KUBERNETES_VERSIONS,
  nodeVersionFor,
} from './node/node-binaries.js';
export { cacheRoot, goModulesDir } from './paths.js';
export { pinBedImages } from './pin-bed-images.js';
export type { PollOptions } from './poll.js';
export { pollUntil } from './poll.js';
export { freePorts } from './ports.js';
// --- Pulumi engine and offline environment (issue 3) ---
export type { EnsurePulumiEngineOptions, PulumiEngine } from './pulumi/engine.js';
export { ensurePulumiEngine, PULUMI_VERSIONS } from './pulumi/engine.js';
export type { PulumiEnv, PulumiEnvOptions, PulumiRunOptions, PulumiRunResult } from './pulumi/pulumi-env.js';
export { createPulumiEnv } from './pulumi/pulumi-env.js';
export type { PulumiErrorContext } from './pulumi/pulumi-error.js';
export { explainPulumiError } from './pulumi/pulumi-error.js';
export type { RealNodeCoordinates, RealNodeInfo } from './real-node-info.js';
export { listClusters, stopClusterByName } from './recorded-clusters.js';
export type { LocalRegistry, RegistryAuth, StartRegistryOptions } from './registry.js';
export { attachToRegistry, putCosignV2Signature, startRegistry } from './registry.js';
export type { TestImage } from './test-image.js';
export { writeTestImage } from './test-image.js';
