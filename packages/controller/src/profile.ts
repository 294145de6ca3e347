import { loadProfile as loadProfileFile, type Profile, revisionRuleGaps } from '@baton/core/profile';
import type { KubeRestClient, RestObject } from '@baton/kube/rest';

export type { Profile } from '@baton/core/profile';
export { ProfileSchema, parseProfile, valueAt } from '@baton/core/profile';

/**
 * Reads and validates a profile (YAML 1.1): a profile folder such as `bootstrap-manifests/flux` (its
 * `rules/profile.yaml`) or the YAML file itself. The schema is @baton/core's, which the handoff engine loads too.
 * @throws ConfigError naming the file and field.
 */
export async function loadProfile(path: string): Promise<Profile> {
  return loadProfileFile(path).profile;
}

/** One unmet rule, for the handoff engine's wait message. */
export interface TakeoverGap {
  /** `deployment`, `crd`, `revision` or `condition`. */
  readonly rule: string;
  /** The object, e.g. `Deployment flux-system/source-controller`. */
  readonly object: string;
  /** What was expected and what was seen. */
  readonly message: string;
}

/** The result of {@link checkTakeover}. */
export interface TakeoverCheck {
  /** True when every rule holds. */
  readonly isTakenOver: boolean;
  /** The revision the controller reports (raw field value), when present. */
  readonly observedRevision: string | undefined;
  readonly gaps: readonly TakeoverGap[];
}

/**
 * Checks once whether the profile's controller has taken over at `expectedRevision` (a commit SHA) of `ref`:
 * Deployments Available, CRDs Established, the revision object and every source object reporting that commit, and
 * their conditions met. Poll it with a deadline; it never throws on a rule that is not met yet.
 *
 * Not the handoff engine's check (`checkTakeover` of `@baton/core`), on purpose: that one decides when a credential
 * may be revoked and also requires the controller's field manager to own every pushed object; this one reads the
 * same profile rules through the controller's own REST client, which has no `@kubernetes/client-node` behind it
 * (ADR 0006). The rule logic itself (revision format, conditions) is shared from `@baton/core/profile`.
 * @throws KubeApiError only on apiserver errors other than 404.
 */
export async function checkTakeover(
  profile: Profile,
  kube: KubeRestClient,
  expectedRevision: string,
  ref = 'main',
): Promise<TakeoverCheck> {
  const gaps: TakeoverGap[] = [];
  for (const name of profile.deployments) gaps.push(...(await deploymentGaps(kube, profile.namespace, name)));
  for (const name of profile.statefulSets) gaps.push(...(await statefulSetGaps(kube, profile.namespace, name)));
  for (const name of profile.crds) gaps.push(...(await crdGaps(kube, name)));
  let observedRevision: string | undefined;
  for (const [i, rule] of [profile.revision, ...profile.sources].entries()) {
    const r = rule.object;
    const object = `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
    const found = revisionRuleGaps(rule, await readRevisionObject(kube, r), expectedRevision, ref);
    if (i === 0) observedRevision = found.observed;
    for (const g of found.gaps) gaps.push({ ...g, object });
  }
  return { isTakenOver: gaps.length === 0, observedRevision, gaps };
}

type Conditions = { type: string; status: string }[];

async function deploymentGaps(kube: KubeRestClient, namespace: string, name: string): Promise<TakeoverGap[]> {
  const object = `Deployment ${namespace}/${name}`;
  const d = await kube.get<
    RestObject & { spec?: { replicas?: number }; status?: { readyReplicas?: number; conditions?: Conditions } }
  >(`/apis/apps/v1/namespaces/${namespace}/deployments/${name}`);
  if (!d) return [{ rule: 'deployment', object, message: 'does not exist' }];
  if (!d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'))
    return [{ rule: 'deployment', object, message: 'is not Available' }];
  const ready = d.status.readyReplicas ?? 0;
  const want = d.spec?.replicas ?? 1;
  return ready < want ? [{ rule: 'deployment', object, message: `has ${ready}/${want} ready replicas` }] : [];
}

async function statefulSetGaps(kube: KubeRestClient, namespace: string, name: string): Promise<TakeoverGap[]> {
  const object = `StatefulSet ${namespace}/${name}`;
  const s = await kube.get<RestObject & { spec?: { replicas?: number }; status?: { readyReplicas?: number } }>(
    `/apis/apps/v1/namespaces/${namespace}/statefulsets/${name}`,
  );
  if (!s) return [{ rule: 'statefulset', object, message: 'does not exist' }];
  const ready = s.status?.readyReplicas ?? 0;
  const want = s.spec?.replicas ?? 1;
  return ready < want ? [{ rule: 'statefulset', object, message: `has ${ready}/${want} ready replicas` }] : [];
}

async function crdGaps(kube: KubeRestClient, name: string): Promise<TakeoverGap[]> {
  const object = `CustomResourceDefinition ${name}`;
  const crd = await kube.get<RestObject & { status?: { conditions?: Conditions } }>(
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
  );
  if (!crd) return [{ rule: 'crd', object, message: 'does not exist' }];
  if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
    return [{ rule: 'crd', object, message: 'is not Established' }];
  return [];
}

/** The object that reports the revision; undefined while it (or its kind) does not exist. */
async function readRevisionObject(
  kube: KubeRestClient,
  ref: Profile['revision']['object'],
): Promise<RestObject | undefined> {
  try {
    return await kube.get(`${await kube.collectionPath(ref.apiVersion, ref.kind, ref.namespace)}/${ref.name}`);
  } catch (err) {
    // The kind is not served yet: its CRD is still missing, which the crd rule already reports.
    if ((err as { details?: { status?: number } }).details?.status !== 404) throw err;
    return undefined;
  }
}
