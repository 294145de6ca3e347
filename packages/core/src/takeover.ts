import {
  type DeploymentState,
  deploymentStatus,
  describeObject,
  type KubeClients,
  type KubeObject,
  type ObjectWatch,
  readObject,
  readPath,
  statefulSetStatus,
  type WatchedRef,
  type WorkloadJson,
  waitingContainers,
} from '@baton/kube';
import type { Clock } from './clock.js';
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

/**
 * How {@link checkTakeover} reads the cluster: by default one GET per object; while the handoff waits, from a watch's
 * memory (see `awaitTakeover`), so that waiting costs the apiserver almost nothing.
 */
export interface TakeoverReader {
  /** The object (undefined: it does not exist, or its kind is not served). */
  read(ref: WatchedRef): Promise<KubeObject | undefined>;
  /** Why the containers of the pods `matchLabels` selects wait, as the kubelet says (best effort). */
  podReasons(namespace: string, matchLabels: Record<string, string>): Promise<string[]>;
}

/** Reads every object afresh with the operator's credential. */
export function directReader(operator: KubeClients): TakeoverReader {
  return {
    read: (ref) => readObject(operator, ref),
    podReasons: (namespace, matchLabels) => waitingContainers(operator, namespace, matchLabels),
  };
}

/**
 * Reads from `watch` (falling back to a GET for an object it has not listed), and lists a Deployment's pods at most
 * every 5 s per selector: their reasons only explain a wait, and a list every 250 ms would cost what the watch saves.
 */
export function watchedReader(
  watch: ObjectWatch,
  operator: KubeClients,
  clock: Clock,
): TakeoverReader & { readonly requests: () => number } {
  const direct = directReader(operator);
  const recent = new Map<string, { readonly atMs: number; readonly reasons: string[] }>();
  let sent = 0;
  return {
    requests: () => watch.requests + sent,
    read: (ref) =>
      watch.read(ref, (r) => {
        sent++;
        return direct.read(r);
      }),
    podReasons: async (namespace, matchLabels) => {
      const key = `${namespace}?${JSON.stringify(matchLabels)}`;
      const hit = recent.get(key);
      if (hit && clock.monotonicMs() - hit.atMs < 5_000) return hit.reasons;
      sent++;
      const reasons = await direct.podReasons(namespace, matchLabels);
      recent.set(key, { atMs: clock.monotonicMs(), reasons });
      return reasons;
    },
  };
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
  reader: TakeoverReader = directReader(operator),
): Promise<TakeoverState> {
  const reasons: string[] = [];
  for (const m of set.objects) {
    if (!isWorkload(m.object.kind)) continue;
    const s = await workloadReadiness(reader, m.object);
    if (!s.isAvailable) reasons.push(`${describeObject(m.object)} not ${readyWord(m.object.kind)} (${s.reason})`);
  }
  if (set.profile) {
    const checked = new Set(
      set.objects.filter((m) => isWorkload(m.object.kind)).map((m) => `${m.object.kind}/${m.object.metadata.name}`),
    );
    reasons.push(...(await profileGaps(reader, set.profile.profile, plan.pull.source.ref, revision, checked)));
  }
  const statusRef = statusRefOf(plan);
  const st = plan.controller.status;
  const statusObj = await reader.read(statusRef);
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
    const live = await reader.read(m.object);
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
  reader: TakeoverReader,
  profile: Profile,
  ref: string,
  commit: string,
  checkedWorkloads: ReadonlySet<string>,
): Promise<string[]> {
  const gaps: string[] = [];
  for (const w of profileWorkloads(profile).filter((w) => !checkedWorkloads.has(`${w.kind}/${w.metadata.name}`))) {
    const s = await workloadReadiness(reader, w);
    if (!s.isAvailable) gaps.push(`${describeObject(w)} not ${readyWord(w.kind)} (${s.reason})`);
  }
  for (const crd of profileCrds(profile)) {
    const o = await reader.read(crd);
    const conds = (readPath(o, 'status.conditions') as { type: string; status: string }[] | undefined) ?? [];
    if (!conds.some((c) => c.type === 'Established' && c.status === 'True'))
      gaps.push(`CustomResourceDefinition ${crd.metadata.name} ${o ? 'not Established' : 'does not exist'}`);
  }
  for (const rule of [profile.revision, ...profile.sources]) {
    const objectRef = ruleRef(rule.object);
    const found = revisionRuleGaps(rule, await reader.read(objectRef), commit, ref);
    for (const g of found.gaps) gaps.push(`${describeObject(objectRef)} ${g.message}`);
  }
  return gaps;
}

/** Every object {@link checkTakeover} reads for this plan and set: what a wait for the takeover follows. */
export function takeoverRefs(plan: HandoffPlan, set: ManifestSet): WatchedRef[] {
  const profile = set.profile?.profile;
  return [
    ...set.objects.map((m) => m.object),
    ...(profile ? [...profileWorkloads(profile), ...profileCrds(profile)] : []),
    ...(profile ? [profile.revision, ...profile.sources].map((r) => ruleRef(r.object)) : []),
    statusRefOf(plan),
  ];
}

function statusRefOf(plan: HandoffPlan): KubeObject {
  const st = plan.controller.status;
  return {
    apiVersion: st.apiVersion,
    kind: st.kind,
    metadata: { name: st.name, namespace: st.namespace ?? plan.controller.namespace },
  };
}

function profileWorkloads(profile: Profile): KubeObject[] {
  const at = (kind: string, name: string): KubeObject => ({
    apiVersion: 'apps/v1',
    kind,
    metadata: { name, namespace: profile.namespace },
  });
  return [
    ...profile.deployments.map((d) => at('Deployment', d)),
    ...profile.statefulSets.map((d) => at('StatefulSet', d)),
  ];
}

function profileCrds(profile: Profile): KubeObject[] {
  return profile.crds.map((name) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
  }));
}

function ruleRef(r: { apiVersion: string; kind: string; name: string; namespace?: string | undefined }): KubeObject {
  return {
    apiVersion: r.apiVersion,
    kind: r.kind,
    metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
  };
}

/** A Deployment Available, or a StatefulSet ready, with the kubelet's reasons when a Deployment is not. */
async function workloadReadiness(reader: TakeoverReader, w: WatchedRef): Promise<DeploymentState> {
  const o = (await reader.read(w)) as WorkloadJson | undefined;
  if (w.kind === 'StatefulSet') return statefulSetStatus(o);
  const s = deploymentStatus(o);
  if (!s.podsMayTell) return { isAvailable: s.isAvailable, reason: s.reason };
  const waiting = await reader.podReasons(w.metadata.namespace ?? '', o?.spec?.selector?.matchLabels ?? {});
  return { isAvailable: false, reason: waiting.length > 0 ? `${s.reason}; ${waiting.join('; ')}` : s.reason };
}

function isWorkload(kind: string): kind is 'Deployment' | 'StatefulSet' {
  return kind === 'Deployment' || kind === 'StatefulSet';
}

function readyWord(kind: string): string {
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
