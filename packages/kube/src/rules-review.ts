import type { KubeClients } from './kube-clients.js';
import { kubeCall } from './kube-error.js';
import { type BootstrapRules, ruleAtoms } from './rbac-rules.js';

// Rules the API server's own default policy gives every ServiceAccount; they are not the bootstrap grant:
// - system:basic-user and friends (every authenticated identity): the self reviews;
// - from Kubernetes 1.37 (ClusterTrustBundle GA), system:cluster-trust-bundle-discovery, bound to
//   system:serviceaccounts: reading ClusterTrustBundles, which hold public trust anchors only. A write to them stays
//   an extra rule.
const BASELINE = [
  /^(authorization\.k8s\.io\|(selfsubjectaccessreviews|selfsubjectrulesreviews)|authentication\.k8s\.io\|selfsubjectreviews)\|create\|\*$/,
  /^certificates\.k8s\.io\|clustertrustbundles\|(get|list|watch)\|\*$/,
];
const isBaseline = (atom: string) => BASELINE.some((b) => b.test(atom));

/** Differences between the effective rules of a credential and the computed ones, in one namespace. */
export interface RulesDiff {
  readonly namespace: string;
  /** Atoms (`group|resource|verb|name`) the credential holds but the plan did not compute. */
  readonly extra: readonly string[];
  /** Atoms the plan computed but the credential does not hold. */
  readonly missing: readonly string[];
  /** True when the review is incomplete (the authorizer could not list every rule). */
  readonly isIncomplete: boolean;
}

/**
 * Runs a SelfSubjectRulesReview as `self` in each namespace the rules touch (plus `probeNamespaces`, where the
 * expected namespaced grant is empty) and compares the effective resource rules with `expected`.
 * Returns one {@link RulesDiff} per namespace; all empty means the credential holds exactly the computed rules.
 * @throws {KubeApiError} when a review fails.
 */
export async function diffEffectiveRules(
  self: KubeClients,
  expected: BootstrapRules,
  probeNamespaces: readonly string[] = [],
): Promise<RulesDiff[]> {
  const namespaces = [...new Set([...Object.keys(expected.namespaced), ...probeNamespaces])].sort();
  const diffs: RulesDiff[] = [];
  for (const namespace of namespaces) {
    const review = await kubeCall(`SelfSubjectRulesReview in namespace ${namespace}`, () =>
      self.authz.createSelfSubjectRulesReview({ body: { spec: { namespace } } }),
    );
    const actual = ruleAtoms(review.status?.resourceRules ?? []);
    const want = ruleAtoms([...expected.cluster, ...(expected.namespaced[namespace] ?? [])]);
    diffs.push({
      namespace,
      extra: [...actual].filter((a) => !want.has(a) && !isBaseline(a)).sort(),
      missing: [...want].filter((a) => !actual.has(a)).sort(),
      isIncomplete: review.status?.incomplete === true,
    });
  }
  return diffs;
}
