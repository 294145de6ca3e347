import type { ControllerSpec, GitSource } from './handoff-inputs.js';

/** Options of {@link batonController}. */
export interface BatonControllerOptions {
  /** The repository, ref and directory the controller pulls (the push writes the same into its GitSync). */
  readonly source: GitSource;
  /**
   * Directory of the rendered push set: bootstrap-manifests/baton-controller with the GitSync pointing at `source`,
   * exactly as the repository carries it (relative paths resolve against the program's directory).
   */
  readonly manifests: string;
  /** @default 'baton-system' */
  readonly namespace?: string;
}

/**
 * baton's own controller (profile `baton-controller`): a Deployment and ServiceAccount `baton-controller`, the pull
 * credential in Secret `baton-pull-credential`, and the applied revision in its GitSync's
 * `status.lastAppliedRevision`.
 */
export function batonController(o: BatonControllerOptions): ControllerSpec {
  const namespace = o.namespace ?? 'baton-system';
  return {
    profile: 'baton-controller',
    manifests: o.manifests,
    source: o.source,
    pullSecretName: 'baton-pull-credential',
    name: 'baton-controller',
    namespace,
    serviceAccount: 'baton-controller',
    status: {
      apiVersion: 'baton.dev/v1alpha1',
      kind: 'GitSync',
      name: 'baton-controller',
      revisionPath: 'status.lastAppliedRevision',
    },
  };
}

/** Ready-made controller specs for {@link Handoff}'s `controller` input. */
export const controllers = { batonController } as const;
