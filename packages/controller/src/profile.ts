import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { parse } from 'yaml';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';
import type { KubeClient, KubeObject } from './kube-client.js';

const ObjectRefSchema = z.strictObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  namespace: z.string().min(1).optional(),
  name: z.string().min(1),
});

const ConditionRuleSchema = z.strictObject({
  /** A dotted path into the object whose value must equal `equals` (e.g. `status.sync.status`). */
  path: z.string().min(1).optional(),
  /** A condition type in `status.conditions` that must have `status: "True"`. */
  conditionType: z.string().min(1).optional(),
  equals: z.string().default('True'),
});

/** A GitOps controller profile: how to tell that it is installed, healthy, and has taken over. */
export const ProfileSchema = z.strictObject({
  name: z.string().min(1).describe('Profile name, e.g. flux'),
  description: z.string().optional(),
  /** Where the controller runs. */
  namespace: z.string().min(1),
  /** Deployments that must be Available (status condition Available=True and all replicas ready). */
  deployments: z.array(z.string().min(1)).default([]),
  /** StatefulSets whose replicas must all be ready (Argo CD's application controller is one). */
  statefulSets: z.array(z.string().min(1)).default([]),
  /** CRDs that must be Established. */
  crds: z.array(z.string().min(1)).default([]),
  /** The object that reports the reconciled Git revision. */
  revision: z.strictObject({
    object: ObjectRefSchema,
    /** Dotted path of the revision field, e.g. `status.lastAppliedRevision`. */
    path: z.string().min(1),
    /** How to compare with the expected commit SHA: Flux writes `main@sha1:<sha>`, Argo CD the bare SHA. */
    match: z.enum(['exact', 'suffix']).default('exact'),
    /** Further rules that must hold on the same object (Ready, Synced, Healthy). */
    conditions: z.array(ConditionRuleSchema).default([]),
  }),
  /** Field managers that must own the pushed objects after takeover (informational for the engine). */
  fieldManagers: z.array(z.string()).default([]),
});
/** A validated profile. */
export type Profile = z.infer<typeof ProfileSchema>;

/**
 * Reads and validates a profile (YAML 1.1): `path` is a profile folder such as
 * `bootstrap-manifests/flux` (the rules are in its `rules/profile.yaml`, outside the top level the
 * push reads as manifests) or the YAML file itself.
 * @throws ConfigError naming the file and field.
 */
export async function loadProfile(path: string): Promise<Profile> {
  const file = /\.ya?ml$/.test(path) ? path : join(path, 'rules', 'profile.yaml');
  let raw: unknown;
  try {
    raw = parse(await readFile(file, 'utf8'), { version: '1.1' });
  } catch (err) {
    throw new ConfigError(`${file}: cannot be read or parsed: ${(err as Error).message}`, { cause: err });
  }
  return parseProfile(raw, file);
}

/**
 * Validates a profile object.
 * @throws ConfigError naming `where` and the field path.
 */
export function parseProfile(raw: unknown, where: string): Profile {
  const r = ProfileSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(`${where}: ${fromZodError(r.error, { prefix: 'invalid profile' }).message}`);
  for (const [i, c] of r.data.revision.conditions.entries()) {
    if ((c.path === undefined) === (c.conditionType === undefined))
      throw new ConfigError(`${where}: revision.conditions[${i}] must set exactly one of path or conditionType`);
  }
  return r.data;
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
 * Checks once whether the profile's controller has taken over at `expectedRevision` (a commit
 * SHA): Deployments Available, CRDs Established, the revision object reporting that commit, and
 * its conditions met. Poll it with a deadline; it never throws on a rule that is not met yet.
 *
 * Not the handoff engine's check (`checkTakeover` of `@baton/core`), on purpose: that one decides when a credential
 * may be revoked, from the plan (`controller.status`) and the pushed set, and requires the controller's field manager
 * to own every pushed object; this one reads a profile's rules (StatefulSets, CRDs, exact or suffix revision match,
 * conditions on the status object) through the controller's own REST client, which has no `@kubernetes/client-node`
 * behind it (ADR 0006). They share no client and few rules, so neither can serve as the other.
 * @throws KubeApiError only on apiserver errors other than 404.
 */
export async function checkTakeover(
  profile: Profile,
  kube: KubeClient,
  expectedRevision: string,
): Promise<TakeoverCheck> {
  const gaps: TakeoverGap[] = [];
  for (const name of profile.deployments) gaps.push(...(await deploymentGaps(kube, profile.namespace, name)));
  for (const name of profile.statefulSets) gaps.push(...(await statefulSetGaps(kube, profile.namespace, name)));
  for (const name of profile.crds) gaps.push(...(await crdGaps(kube, name)));
  const ref = profile.revision.object;
  const object = `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
  const obj = await readRevisionObject(kube, ref);
  if (!obj) {
    gaps.push({ rule: 'revision', object, message: 'does not exist' });
    return { isTakenOver: false, observedRevision: undefined, gaps };
  }
  const v = valueAt(obj, profile.revision.path);
  const observedRevision = typeof v === 'string' ? v : undefined;
  if (!revisionMatches(profile.revision.match, observedRevision, expectedRevision)) {
    gaps.push({
      rule: 'revision',
      object,
      message: `${profile.revision.path} is ${JSON.stringify(v ?? null)}, expected ${profile.revision.match === 'exact' ? '' : '…'}${expectedRevision}`,
    });
  }
  for (const c of profile.revision.conditions) {
    const message = conditionGap(obj, c);
    if (message) gaps.push({ rule: 'condition', object, message });
  }
  return { isTakenOver: gaps.length === 0, observedRevision, gaps };
}

type Conditions = { type: string; status: string }[];

async function deploymentGaps(kube: KubeClient, namespace: string, name: string): Promise<TakeoverGap[]> {
  const object = `Deployment ${namespace}/${name}`;
  const d = await kube.get<
    KubeObject & { spec?: { replicas?: number }; status?: { readyReplicas?: number; conditions?: Conditions } }
  >(`/apis/apps/v1/namespaces/${namespace}/deployments/${name}`);
  if (!d) return [{ rule: 'deployment', object, message: 'does not exist' }];
  if (!d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'))
    return [{ rule: 'deployment', object, message: 'is not Available' }];
  const ready = d.status.readyReplicas ?? 0;
  const want = d.spec?.replicas ?? 1;
  return ready < want ? [{ rule: 'deployment', object, message: `has ${ready}/${want} ready replicas` }] : [];
}

async function statefulSetGaps(kube: KubeClient, namespace: string, name: string): Promise<TakeoverGap[]> {
  const object = `StatefulSet ${namespace}/${name}`;
  const s = await kube.get<KubeObject & { spec?: { replicas?: number }; status?: { readyReplicas?: number } }>(
    `/apis/apps/v1/namespaces/${namespace}/statefulsets/${name}`,
  );
  if (!s) return [{ rule: 'statefulset', object, message: 'does not exist' }];
  const ready = s.status?.readyReplicas ?? 0;
  const want = s.spec?.replicas ?? 1;
  return ready < want ? [{ rule: 'statefulset', object, message: `has ${ready}/${want} ready replicas` }] : [];
}

async function crdGaps(kube: KubeClient, name: string): Promise<TakeoverGap[]> {
  const object = `CustomResourceDefinition ${name}`;
  const crd = await kube.get<KubeObject & { status?: { conditions?: Conditions } }>(
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
  );
  if (!crd) return [{ rule: 'crd', object, message: 'does not exist' }];
  if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
    return [{ rule: 'crd', object, message: 'is not Established' }];
  return [];
}

/** The object that reports the revision; undefined while it (or its kind) does not exist. */
async function readRevisionObject(
  kube: KubeClient,
  ref: Profile['revision']['object'],
): Promise<KubeObject | undefined> {
  try {
    return await kube.get(`${await kube.collectionPath(ref.apiVersion, ref.kind, ref.namespace)}/${ref.name}`);
  } catch (err) {
    // The kind is not served yet: its CRD is still missing, which the crd rule already reports.
    if ((err as { details?: { status?: number } }).details?.status !== 404) throw err;
    return undefined;
  }
}

/** Flux writes `main@sha1:<sha>` (match `suffix`), Argo CD the bare SHA (match `exact`). */
function revisionMatches(match: Profile['revision']['match'], observed: string | undefined, expected: string): boolean {
  if (observed === undefined) return false;
  return match === 'exact' ? observed === expected : observed.endsWith(expected);
}

/** Why one condition rule does not hold on the revision object, or undefined when it holds. */
function conditionGap(obj: KubeObject, c: Profile['revision']['conditions'][number]): string | undefined {
  if (c.conditionType) {
    const cond = (valueAt(obj, 'status.conditions') as Conditions | undefined)?.find((x) => x.type === c.conditionType);
    return cond?.status === c.equals
      ? undefined
      : `condition ${c.conditionType} is ${cond?.status ?? 'missing'}, expected ${c.equals}`;
  }
  if (!c.path) return undefined;
  const got = valueAt(obj, c.path);
  return got === c.equals ? undefined : `${c.path} is ${JSON.stringify(got ?? null)}, expected ${c.equals}`;
}

/** Reads a dotted path (`status.sync.revision`) from an object. */
export function valueAt(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}
