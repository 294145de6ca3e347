import {
  bootstrapName,
  computeBootstrapRules,
  describeObject,
  flattenRules,
  INSTALL_KINDS,
  kindsFromCrds,
  planConfinement,
  type RbacRule,
  writableView,
} from '@baton/kube/plan';
import type { LoadedPlan } from './handoff-plan.js';
import { loadManifestSet, type ManifestSet } from './manifest-set.js';

/** What a handoff of a plan would do, computed without a cluster (for `pulumi preview` and `baton up --dry-run`). */
export interface HandoffPreview {
  /** The objects the push applies, in order, as Kind/namespace/name. */
  readonly objects: readonly string[];
  /** Push-only objects (plan Secrets that never live in Git). */
  readonly pushOnly: readonly string[];
  /** `sha256:` of the manifest set (Secret values excluded): what the confinement enforces. */
  readonly planDigest: string;
  /** The bootstrap credential's RBAC rules: exact verbs, names wherever the API allows, no wildcard. */
  readonly rules: readonly RbacRule[];
  readonly confinement: {
    /** The policy's name: the run's bootstrap name, known once the run has an id. */
    readonly policyName: string;
    readonly subject: string;
    readonly fieldManager: string;
    /** The only writes allowed (create/apply, no delete, no subresource), as Kind/namespace/name. */
    readonly allowed: readonly string[];
    readonly validationCount: number;
    readonly policyBytes: number;
    /** What is pinned, in one sentence (the values are pinned to the API server's defaults at run time). */
    readonly content: string;
  };
}

const RUN_PLACEHOLDER = 'run-id';

/**
 * The push plan of a handoff: objects, plan digest, the credential's rules and its confinement, computed from the plan
 * and its manifest set alone (`set`: the plan's, already loaded). Nothing touches a cluster.
 * @throws {ConfigError} when the plan's manifest set is refused (as `baton up` would refuse it).
 */
export function previewHandoff(loaded: LoadedPlan, set: ManifestSet = loadManifestSet(loaded.plan)): HandoffPreview {
  const { plan } = loaded;
  const objects = set.objects.map((m) => m.object);
  const rules = computeBootstrapRules(objects);
  const kinds = { ...kindsFromCrds(objects), ...INSTALL_KINDS };
  const name = bootstrapName(RUN_PLACEHOLDER).replace(RUN_PLACEHOLDER, '<run-id>');
  const subject = `system:serviceaccount:${plan.batonNamespace}:${name}`;
  const c = planConfinement({
    name,
    runId: RUN_PLACEHOLDER,
    username: subject,
    planDigest: set.digest,
    fieldManager: plan.push.fieldManager,
    objects: objects.map((o) => ({
      group: kinds[o.kind]!.group,
      resource: kinds[o.kind]!.resource,
      expected: writableView(o),
    })),
  });
  return {
    objects: objects.map(describeObject),
    pushOnly: set.pushOnly,
    planDigest: set.digest,
    rules: flattenRules(rules),
    confinement: {
      policyName: name,
      subject,
      fieldManager: plan.push.fieldManager,
      allowed: c.allowed,
      validationCount: c.validationCount,
      policyBytes: c.policyBytes,
      content:
        'each object exactly as planned, as the API server defaults it: labels and annotations, every top-level field (rules and aggregation of roles, roleRef and subjects of bindings, a Deployment’s whole spec), no owner references; Secrets by type and keys, never values; field manager ' +
        plan.push.fieldManager +
        '; after the push, no write at all',
    },
  };
}
