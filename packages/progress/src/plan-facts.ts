import { type LoadedPlan, loadManifestSet } from '@baton/core';
import { computeBootstrapRules, flattenRules } from '@baton/kube';
import type { PlanFacts } from './step-tracker.js';

/**
 * What a plan says before the run: the RBAC rules the bootstrap credential gets and the objects the push applies,
 * computed from the plan's manifests by the same functions the handoff uses.
 * @throws {ConfigError} when the manifest set is refused (the handoff would refuse it the same way).
 */
export function planFacts(loaded: LoadedPlan): PlanFacts {
  const set = loadManifestSet(loaded.plan);
  const rules = flattenRules(computeBootstrapRules(set.objects.map((m) => m.object)));
  const revision = loaded.plan.pull.source.revision;
  return { rules: rules.length, objects: set.objects.length, ...(revision ? { revision } : {}) };
}
