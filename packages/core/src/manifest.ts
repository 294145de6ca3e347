// What a manifest set is, apart from how it is read and checked (./manifest-set.ts) and the rules it is checked
// against (./install-rules.ts, ./manifest-secrets.ts): the rule files and the reader both take these types.
import type { KubeObject } from '@baton/kube/plan';
import type { LoadedProfile } from './profile.js';

/** One object of the manifest set, with where it came from. */
export interface ManifestObject {
  readonly object: KubeObject;
  /** File relative to the manifest directory. */
  readonly file: string;
  /** Document index in the file (0-based). */
  readonly doc: number;
  /** 1-based line where the document starts. */
  readonly line: number;
}

/** A validated manifest set: exactly what the push will apply, in apply order. */
export interface ManifestSet {
  readonly dir: string;
  readonly objects: readonly ManifestObject[];
  /** `sha256:<hex>` over the canonical JSON of the objects in apply order. */
  readonly digest: string;
  /**
   * Objects the push creates that the controller does not take over, as Kind/namespace/name: plan-declared Secrets
   * (never in Git) and what the profile lists as push-only (e.g. CRDs and RBAC a scoped Flux cannot apply).
   */
  readonly pushOnly: readonly string[];
  /** The profile whose takeover rules are checked too, when the plan names one or the manifests carry one. */
  readonly profile?: LoadedProfile;
  /** The controller's image reference without digest, and its digest. */
  readonly controllerImage: { readonly image: string; readonly digest: string };
}
