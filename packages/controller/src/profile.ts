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
 * @throws KubeApiError only on apiserver errors other than 404.
 */
export async function checkTakeover(
  profile: Profile,
  kube: KubeClient,
  expectedRevision: string,
): Promise<TakeoverCheck> {
  const gaps: TakeoverGap[] = [];
  for (const name of profile.deployments) {
    const object = `Deployment ${profile.namespace}/${name}`;
    const d = await kube.get<
      KubeObject & {
        spec?: { replicas?: number };
        status?: { readyReplicas?: number; conditions?: { type: string; status: string }[] };
      }
    >(`/apis/apps/v1/namespaces/${profile.namespace}/deployments/${name}`);
    if (!d) gaps.push({ rule: 'deployment', object, message: 'does not exist' });
    else if (!d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'))
      gaps.push({ rule: 'deployment', object, message: 'is not Available' });
    else if ((d.status.readyReplicas ?? 0) < (d.spec?.replicas ?? 1))
      gaps.push({
        rule: 'deployment',
        object,
        message: `has ${d.status.readyReplicas ?? 0}/${d.spec?.replicas ?? 1} ready replicas`,
      });
  }
  for (const name of profile.statefulSets) {
    const object = `StatefulSet ${profile.namespace}/${name}`;
    const s = await kube.get<KubeObject & { spec?: { replicas?: number }; status?: { readyReplicas?: number } }>(
      `/apis/apps/v1/namespaces/${profile.namespace}/statefulsets/${name}`,
    );
    if (!s) gaps.push({ rule: 'statefulset', object, message: 'does not exist' });
    else if ((s.status?.readyReplicas ?? 0) < (s.spec?.replicas ?? 1))
      gaps.push({
        rule: 'statefulset',
        object,
        message: `has ${s.status?.readyReplicas ?? 0}/${s.spec?.replicas ?? 1} ready replicas`,
      });
  }
  for (const name of profile.crds) {
    const object = `CustomResourceDefinition ${name}`;
    const crd = await kube.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
    );
    if (!crd) gaps.push({ rule: 'crd', object, message: 'does not exist' });
    else if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
      gaps.push({ rule: 'crd', object, message: 'is not Established' });
  }
  const ref = profile.revision.object;
  const object = `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
  let observedRevision: string | undefined;
  let obj: KubeObject | undefined;
  try {
    obj = await kube.get(`${await kube.collectionPath(ref.apiVersion, ref.kind, ref.namespace)}/${ref.name}`);
  } catch (err) {
    // The kind is not served yet: its CRD is still missing, which the crd rule already reports.
    if ((err as { details?: { status?: number } }).details?.status !== 404) throw err;
  }
  if (!obj) gaps.push({ rule: 'revision', object, message: 'does not exist' });
  else {
    const v = valueAt(obj, profile.revision.path);
    observedRevision = typeof v === 'string' ? v : undefined;
    const ok =
      observedRevision !== undefined &&
      (profile.revision.match === 'exact'
        ? observedRevision === expectedRevision
        : observedRevision.endsWith(expectedRevision));
    if (!ok)
      gaps.push({
        rule: 'revision',
        object,
        message: `${profile.revision.path} is ${JSON.stringify(v ?? null)}, expected ${profile.revision.match === 'exact' ? '' : '…'}${expectedRevision}`,
      });
    for (const c of profile.revision.conditions) {
      if (c.conditionType) {
        const cond = (valueAt(obj, 'status.conditions') as { type: string; status: string }[] | undefined)?.find(
          (x) => x.type === c.conditionType,
        );
        if (cond?.status !== c.equals)
          gaps.push({
            rule: 'condition',
            object,
            message: `condition ${c.conditionType} is ${cond?.status ?? 'missing'}, expected ${c.equals}`,
          });
      } else if (c.path) {
        const got = valueAt(obj, c.path);
        if (got !== c.equals)
          gaps.push({
            rule: 'condition',
            object,
            message: `${c.path} is ${JSON.stringify(got ?? null)}, expected ${c.equals}`,
          });
      }
    }
  }
  return { isTakenOver: gaps.length === 0, observedRevision, gaps };
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
