import {
  deploymentState,
  describeObject,
  type KubeClients,
  type KubeObject,
  readObject,
  readPath,
  statefulSetState,
  workloadState,
} from '@baton/kube';
import type { HandoffPlan } from './handoff-plan.js';
import type { ManifestSet } from './manifest-set.js';
import { type Profile, revisionRuleGaps } from './profile.js';

/** One look at whether the controller has taken over. */
export interface TakeoverState {
  /** True when every required condition holds. */
  readonly isComplete: boolean;
  /** Why not yet (for logs and the timeout message). */
  readonly reason: string;
  /** The revision the controller reports, when it reports one. */
  readonly revisionSeen: string | undefined;
  /** Pushed objects the controller owns, as Kind/namespace/name. */
  readonly ownedObjects: readonly string[];
  /** Pushed objects the controller does not (yet) own. */
  readonly notTakenOver: readonly string[];
  /** Plan-declared push-only objects (never in Git), not expected to be taken over. */
  readonly pushOnly: readonly string[];
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: unknown;
}

/**
 * Checks, with the operator's credential, that the controller has really taken over: its Deployments are
 * Available, its status object reports `revision`, the profile's rules hold (when the set has a profile: its
 * workloads ready, CRDs Established, revision and source objects reporting the commit in their format with their
 * conditions, e.g. Flux's Kustomization and GitRepository Ready on `main@sha1:<commit>`), and its field manager owns
 * every pushed object that is not push-only: it applies the object, and every field the push applied is also applied
 * by the controller (shared ownership of equal values counts: the push identity is gone once revoked).
 * @throws {KubeApiError} when a read fails for another reason than "not found".
 */
export async function checkTakeover(
  operator: KubeClients,
  plan: HandoffPlan,
  set: ManifestSet,
  revision: string,
): Promise<TakeoverState> {
  const reasons: string[] = [];
  for (const m of set.objects) {
    if (!isWorkload(m.object.kind)) continue;
    const s = await workloadState(operator, m.object.kind, m.object.metadata.namespace ?? '', m.object.metadata.name);
    if (!s.isAvailable) reasons.push(`${describeObject(m.object)} not ${readyWord(m.object.kind)} (${s.reason})`);
  }
  if (set.profile) {
    const checked = new Set(
      set.objects.filter((m) => isWorkload(m.object.kind)).map((m) => `${m.object.kind}/${m.object.metadata.name}`),
    );
    reasons.push(...(await profileGaps(operator, set.profile.profile, plan.pull.source.ref, revision, checked)));
  }
  const st = plan.controller.status;
  const statusRef: KubeObject = {
    apiVersion: st.apiVersion,
    kind: st.kind,
    metadata: { name: st.name, namespace: st.namespace ?? plan.controller.namespace },
  };
  const statusObj = await readObject(operator, statusRef);
  const seen = statusObj ? readPath(statusObj, st.revisionPath) : undefined;
  const revisionSeen = typeof seen === 'string' ? seen : undefined;
  // Flux reports `main@sha1:<commit>`: a value that ends in the commit is that commit. A profile rule on the same
  // field is stricter (its format) and already reported.
  const profileRule = set.profile?.profile.revision;
  const isProfileRule =
    profileRule?.object.kind === st.kind &&
    profileRule.object.name === st.name &&
    (profileRule.object.namespace ?? '') === (statusRef.metadata.namespace ?? '') &&
    profileRule.path === st.revisionPath;
  if (!isProfileRule && !revisionSeen?.endsWith(revision)) {
    reasons.push(
      `${describeObject(statusRef)} ${st.revisionPath} is ${revisionSeen ?? 'absent'}, waiting for ${revision.slice(0, 12)}`,
    );
  }
  const owned: string[] = [];
  const notTakenOver: string[] = [];
  for (const m of set.objects) {
    const id = describeObject(m.object);
    if (set.pushOnly.includes(id)) continue;
    const live = await readObject(operator, m.object);
    if (live && isOwnedBy(live, plan.controller.fieldManager, plan.push.fieldManager)) owned.push(id);
    else notTakenOver.push(id);
  }
  if (notTakenOver.length > 0 && plan.takeover.requireOwnership) {
    reasons.push(
      `${plan.controller.fieldManager} does not own ${notTakenOver.length} pushed object(s): ${notTakenOver.slice(0, 3).join(', ')}`,
    );
  }
  return {
    isComplete: reasons.length === 0,
    reason: reasons.join('; '),
    revisionSeen,
    ownedObjects: owned,
    notTakenOver,
    pushOnly: set.pushOnly,
  };
}

/** Why the profile's rules do not hold yet, one message per unmet rule (workloads of the set, `Kind/name`, already checked). */
async function profileGaps(
  operator: KubeClients,
  profile: Profile,
  ref: string,
  commit: string,
  checkedWorkloads: ReadonlySet<string>,
): Promise<string[]> {
  const gaps: string[] = [];
  for (const name of profile.deployments.filter((d) => !checkedWorkloads.has(`Deployment/${d}`))) {
    const s = await deploymentState(operator, profile.namespace, name);
    if (!s.isAvailable) gaps.push(`Deployment ${profile.namespace}/${name} not Available (${s.reason})`);
  }
  for (const name of profile.statefulSets.filter((d) => !checkedWorkloads.has(`StatefulSet/${d}`))) {
    const s = await statefulSetState(operator, profile.namespace, name);
    if (!s.isAvailable) gaps.push(`StatefulSet ${profile.namespace}/${name} not ready (${s.reason})`);
  }
  for (const name of profile.crds) {
    const o = await readObject(operator, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name },
    });
    const conds = (readPath(o, 'status.conditions') as { type: string; status: string }[] | undefined) ?? [];
    if (!conds.some((c) => c.type === 'Established' && c.status === 'True'))
      gaps.push(`CustomResourceDefinition ${name} ${o ? 'not Established' : 'does not exist'}`);
  }
  for (const rule of [profile.revision, ...profile.sources]) {
    const r = rule.object;
    const objectRef: KubeObject = {
      apiVersion: r.apiVersion,
      kind: r.kind,
      metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
    };
    const found = revisionRuleGaps(rule, await readObject(operator, objectRef), commit, ref);
    for (const g of found.gaps) gaps.push(`${describeObject(objectRef)} ${g.message}`);
  }
  return gaps;
}

function isWorkload(kind: string): kind is 'Deployment' | 'StatefulSet' {
  return kind === 'Deployment' || kind === 'StatefulSet';
}

function readyWord(kind: 'Deployment' | 'StatefulSet'): string {
  return kind === 'StatefulSet' ? 'ready' : 'Available';
}

/** True when `controller` applies `o` and owns every field `push` owns. */
export function isOwnedBy(o: KubeObject, controller: string, push: string): boolean {
  const entries = ((o.metadata.managedFields as ManagedFieldsEntry[] | undefined) ?? []).filter((e) => !e.subresource);
  const mine = entries.filter((e) => e.manager === controller && e.operation === 'Apply');
  if (mine.length === 0) return false;
  const controllerFields = new Set(mine.flatMap((e) => fieldPaths(e.fieldsV1)));
  return entries
    .filter((e) => e.manager === push)
    .every((e) => fieldPaths(e.fieldsV1).every((p) => controllerFields.has(p)));
}

/** Leaf paths of a `fieldsV1` tree (`f:spec/f:replicas`); the `.` self-markers are dropped. */
export function fieldPaths(fields: unknown, prefix = ''): string[] {
  if (fields === null || typeof fields !== 'object') return [];
  const keys = Object.keys(fields).filter((k) => k !== '.');
  if (keys.length === 0) return prefix ? [prefix] : [];
  return keys.flatMap((k) => fieldPaths((fields as Record<string, unknown>)[k], prefix ? `${prefix}/${k}` : k));
}
