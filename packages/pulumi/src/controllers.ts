import type { ControllerSpec, GitSource } from './handoff-inputs.js';

/** Options of a ready-made controller spec ({@link controllers}). */
export interface ControllerOptions {
  /** The repository, ref and directory the controller pulls (the push set names the same source). */
  readonly source: GitSource;
  /**
   * Directory of the rendered push set: `bootstrap-manifests/<profile>` pointing at `source`, exactly as the
   * repository carries it, with the profile's `rules/profile.yaml` (relative paths resolve against the program's
   * directory). The profile gives the controller block: its Deployment, namespace, ServiceAccount, status object,
   * field manager and pull Secret.
   */
  readonly manifests: string;
  /**
   * Any field of the plan's controller block, over the profile's (e.g. `namespace` or `privilege`).
   * @default the profile's
   */
  readonly overrides?: Omit<ControllerSpec, 'profile' | 'manifests' | 'source'>;
}

/** Options of {@link batonController}. */
export interface BatonControllerOptions extends ControllerOptions {
  /** @default the profile's namespace, 'baton-system' */
  readonly namespace?: string;
}

/**
 * The spec of a controller `profile`: what the push installs from `manifests`, what the controller pulls, and the
 * controller block from the profile the push set carries (`rules/profile.yaml`), with `overrides` over it.
 */
export function controllerOf(profile: string, o: ControllerOptions): ControllerSpec {
  return { ...o.overrides, profile, manifests: o.manifests, source: o.source };
}

/**
 * baton's own controller (profile `baton-controller`): a Deployment and ServiceAccount `baton-controller`, the pull
 * credential in Secret `baton-pull-credential`, and the applied revision in its GitSync's
 * `status.lastAppliedRevision` (all from `bootstrap-manifests/baton-controller/rules/profile.yaml`).
 */
export function batonController(o: BatonControllerOptions): ControllerSpec {
  return controllerOf('baton-controller', {
    ...o,
    overrides: { ...o.overrides, ...(o.namespace !== undefined ? { namespace: o.namespace } : {}) },
  });
}

/**
 * Real Flux (profile `flux`): source-controller and kustomize-controller; kustomize-controller takes over, applying
 * as `kustomize-controller`, and the root Kustomization `flux-system` reports the applied `<ref>@sha1:<commit>`; the
 * pull credential is Secret `flux-system` (all from `bootstrap-manifests/flux/rules/profile.yaml`).
 * `overrides.privilege: 'cluster-admin'` is upstream's choice, recorded in the audit event.
 */
export function flux(o: ControllerOptions): ControllerSpec {
  return controllerOf('flux', o);
}

/**
 * Argo CD (profile `argocd`): the controller block comes from `bootstrap-manifests/argocd/rules/profile.yaml`, which
 * must carry one (`controller:`), or from `overrides`.
 */
export function argocd(o: ControllerOptions): ControllerSpec {
  return controllerOf('argocd', o);
}

/** Ready-made controller specs for {@link Handoff}'s `controller` input, one per profile. */
export const controllers = { batonController, flux, argocd, of: controllerOf } as const;
