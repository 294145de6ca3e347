// @baton/testenv/beds: the GitOps beds: a cluster with a controller side (baton-controller, Flux, Argo CD) whose
// plan hands off to it, and the controllers built from Go modules.
// --- Argo CD, built on demand (issue 19) ---
export type { ArgoCd, EnsureArgoCdOptions } from './argocd/argocd-build.js';
export { ARGOCD_GO_TOOLCHAIN, ARGOCD_VERSION, ensureArgoCd } from './argocd/argocd-build.js';
export type { BedImage } from './argocd/argocd-images.js';
export { ARGOCD_IMAGES, ARGOCD_REDIS_UNSIGNED, buildArgoCdImages } from './argocd/argocd-images.js';
export type { ArgoCdSide, StartArgoCdBedOptions, StartArgoCdSideOptions } from './argocd/argocd-side.js';
export { ARGOCD_REPO_SECRET, startArgoCdBed, startArgoCdSide } from './argocd/argocd-side.js';
export type { BatonControllerSide, StartBatonControllerSideOptions } from './baton-controller-side.js';
export { startBatonControllerSide } from './baton-controller-side.js';
// --- Flux's controllers, built on demand (issue 13) ---
export type { EnsureFluxControllersOptions, FluxControllers } from './flux/flux-controllers.js';
export { ensureFluxControllers, FLUX_VERSIONS } from './flux/flux-controllers.js';
export { FLUX_IMAGES, FLUX_RELEASE_IDENTITY, fluxReleaseSigner, pushFluxImages } from './flux/flux-images.js';
export type { FluxSide, StartFluxBedOptions, StartFluxSideOptions } from './flux/flux-side.js';
export { startFluxBed, startFluxSide } from './flux/flux-side.js';
export type { AuditKeyPaths, ControllerSide, GitOpsSideOptions, SideBase } from './gitops-side.js';
export type { BedCluster, HandoffBed, StartBedClusterOptions, StartHandoffBedOptions } from './handoff-bed.js';
export { startBedCluster, startHandoffBed } from './handoff-bed.js';
