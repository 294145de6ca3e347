// A controller profile: the rules that say a GitOps controller has taken over. Read by the handoff engine (with the
// plan) and by @baton/controller's own check; this module depends on zod and yaml only, so the controller can use it
// without the Kubernetes client behind @baton/core's main entry.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { parse } from 'yaml';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';
import { ProfileImageRuleSchema, VerifierKeysSchema } from './images/image-rules.js';
import { KeylessPolicySchema } from './images/keyless-policy.js';
import { ProvenancePolicySchema } from './images/provenance-policy.js';

const ObjectRefSchema = z.strictObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  namespace: z.string().min(1).optional(),
  name: z.string().min(1),
});

const ConditionRuleSchema = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .optional()
      .describe('dotted path whose value must equal `equals` (e.g. `status.sync.status`)'),
    conditionType: z
      .string()
      .min(1)
      .optional()
      .describe('a condition type in `status.conditions` that must be `equals`'),
    equals: z.string().default('True'),
  })
  .refine((c) => (c.path === undefined) !== (c.conditionType === undefined), {
    message: 'set exactly one of path or conditionType',
  });

/** An object that must report the declared commit, and the conditions that must hold on it. */
const RevisionRuleSchema = z.strictObject({
  object: ObjectRefSchema,
  path: z.string().min(1).describe('dotted path of the reported revision, e.g. `status.lastAppliedRevision`'),
  format: z
    .string()
    .regex(/\{commit\}/, 'must contain {commit}')
    .optional()
    .describe('the exact value reported for commit {commit} of ref {ref}, e.g. Flux `{ref}@sha1:{commit}`'),
  match: z
    .enum(['exact', 'suffix'])
    .default('exact')
    .describe('without `format`: the value is the commit (exact) or ends in it (suffix)'),
  conditions: z.array(ConditionRuleSchema).default([]),
  quote: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'dotted paths whose values are quoted while the rule does not hold, e.g. Argo CD’s `status.conditions` (each as type: message) and `status.operationState.message`',
    ),
});

/** Pushed objects the controller does not take over, with why (they are listed as push-only, never waited for). */
const PushOnlyRuleSchema = z.strictObject({
  kind: z.string().min(1),
  name: z.string().min(1).optional().describe('@default every object of the kind'),
  reason: z.string().min(1),
});

/**
 * A field of one of the profile's kinds that names a Secret the controller reads (a GitSync's `spec.secretRef.name`,
 * a Flux GitRepository's): the push must create that Secret, with these keys (issue 28: a GitSync named a webhook
 * Secret no plan created, and the takeover only timed out).
 */
const SecretRefSchema = z.strictObject({
  kind: z.string().min(1),
  field: z.string().min(1).describe('dotted path to the Secret name, e.g. spec.webhookSecretRef.name'),
  keys: z
    .array(z.string().min(1))
    .default([])
    .describe('keys the controller reads (baton init writes random values for them); empty: any'),
  optional: z.boolean().default(false).describe('the controller runs without it (then a missing one is allowed)'),
});

/**
 * What a plan's `controller` block (and `pull.credential.secretName`) says of this controller by default. The
 * namespace is the profile's, the status object its `revision` rule's, the field manager its first `fieldManagers`.
 */
/** One field of the push set that names the Git source, rendered by `baton init` from the plan's `pull.source`. */
const SourceFieldSchema = z.strictObject({
  kind: z.string().min(1),
  name: z.string().min(1),
  field: z.string().min(1).describe('dotted path in the object, e.g. spec.url'),
  value: z
    .string()
    .regex(/\{(url|ref|path)\}/, 'must contain {url}, {ref} or {path}')
    .describe('what the field becomes: {url}, {ref} and {path} are the plan’s pull.source'),
});

const ControllerBlockSchema = z.strictObject({
  name: z.string().min(1).describe('the controller Deployment (a plan’s controller.name)'),
  serviceAccount: z.string().min(1).describe('its ServiceAccount (a plan’s controller.serviceAccount)'),
  pullSecret: z
    .string()
    .min(1)
    .describe('the Secret holding the read-only Git credential it pulls with (a plan’s pull.credential.secretName)'),
  source: z
    .array(SourceFieldSchema)
    .default([])
    .describe('where the push set names the Git source the controller pulls (`baton init` renders these fields)'),
  pullSecretLabels: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      'labels of the pull Secret made from the plan’s pull.credential.fromFile, unless the plan gives its own (Argo CD reads only a Secret labelled argocd.argoproj.io/secret-type: repository)',
    ),
  pullSecretData: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      'keys the pull Secret made from fromFile carries besides the file’s, which win: {url}, {ref} and {path} are the plan’s pull.source (Argo CD matches a repository credential by its url key)',
    ),
});

/** The Git source a profile's templates are filled with (a plan's `pull.source`). */
export interface TemplateSource {
  readonly url: string;
  readonly ref: string;
  readonly path: string;
}

/** `template` with {url}, {ref} and {path} replaced by `s`'s (a profile's controller.source values, pullSecretData). */
export function fillSource(template: string, s: TemplateSource): string {
  return template.replaceAll('{url}', s.url).replaceAll('{ref}', s.ref).replaceAll('{path}', s.path);
}

/** A GitOps controller profile: how to tell that it is installed, healthy, and has taken over. */
export const ProfileSchema = z
  .strictObject({
    name: z.string().min(1).describe('profile name, e.g. flux'),
    description: z.string().optional(),
    namespace: z.string().min(1).describe('where the controller runs'),
    deployments: z.array(z.string().min(1)).default([]).describe('Deployments that must be Available'),
    statefulSets: z.array(z.string().min(1)).default([]).describe('StatefulSets whose replicas must all be ready'),
    crds: z.array(z.string().min(1)).default([]).describe('CRDs that must be Established'),
    revision: RevisionRuleSchema.describe('the object that reports the reconciled Git revision'),
    sources: z
      .array(RevisionRuleSchema)
      .default([])
      .describe('further objects that must report the same commit (Flux: the GitRepository)'),
    fieldManagers: z
      .array(z.string().min(1))
      .default([])
      .describe('field managers the controller applies with; the plan’s controller.fieldManager must be one'),
    pushOnly: z.array(PushOnlyRuleSchema).default([]),
    secretRefs: z
      .array(SecretRefSchema)
      .default([])
      .describe('fields of the profile’s kinds that name Secrets the push must create'),
    controller: ControllerBlockSchema.optional().describe(
      'the plan’s controller block as this profile installs it: a plan may omit it and override any field',
    ),
    imageTrust: z
      .strictObject({
        keys: VerifierKeysSchema.optional().describe(
          'verifier keys (name+hash+base64, as `baton audit keygen` prints them) an image may be signed by',
        ),
        keyless: KeylessPolicySchema.optional(),
        provenance: ProvenancePolicySchema.optional(),
        rules: z
          .array(ProfileImageRuleSchema)
          .min(1)
          .optional()
          .describe(
            'per-repository rules, checked in order before keys and keyless: who signs those images, or why they are pushed unsigned',
          ),
      })
      .refine((t) => t.keys !== undefined || t.keyless !== undefined || t.rules !== undefined, {
        message: 'declare keys, keyless or rules: an empty imageTrust trusts nothing',
      })
      .optional()
      .describe(
        'the keys or keyless identities the images of this profile’s push set must be signed by (cosign v3 signatures, checked in their registry before anything is minted); a plan’s push.images.trustedKeys or keyless replaces them',
      ),
    imagePinnedByTag: z
      .string()
      .min(1)
      .optional()
      .describe(
        'why the controller image is pinned by an exact release tag instead of a digest (upstream publishes none); absent: a digest is required',
      ),
  })
  .describe('baton controller profile');

/** A validated profile. */
export type Profile = z.infer<typeof ProfileSchema>;
/** A field of a profile's kind that names a Secret the push must create. */
export type SecretRef = Profile['secretRefs'][number];
/** One revision rule of a profile. */
export type RevisionRule = Profile['revision'];
/** One field of the push set that names the Git source. */
export type SourceField = NonNullable<Profile['controller']>['source'][number];
/** One condition rule of a revision rule. */
export type ConditionRule = RevisionRule['conditions'][number];

/** A profile with the file it came from and a digest of its rules (for the audit record). */
export interface LoadedProfile {
  readonly file: string;
  /** `sha256:<hex>` of the file's bytes. */
  readonly digest: string;
  readonly profile: Profile;
}

/**
 * Validates a profile object.
 * @throws {ConfigError} naming `where` and the field path.
 */
export function parseProfile(raw: unknown, where: string): Profile {
  const r = ProfileSchema.safeParse(raw);
  if (!r.success) {
    throw new ConfigError(
      `${where}: ${fromZodError(r.error, { prefix: 'invalid profile', prefixSeparator: ': ' }).message}`,
      { details: { file: where, issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) } },
    );
  }
  return r.data;
}

/** The profile file of a profile folder (`bootstrap-manifests/flux` → its `rules/profile.yaml`) or the file itself. */
export function profileFile(path: string): string {
  return /\.ya?ml$/.test(path) ? path : join(path, 'rules', 'profile.yaml');
}

/**
 * Reads and validates a profile (YAML 1.1): a profile folder (its `rules/profile.yaml`, outside the top level the
 * push reads as manifests) or the YAML file itself.
 * @throws {ConfigError} naming the file and field.
 */
export function loadProfile(path: string): LoadedProfile {
  const file = profileFile(path);
  let text: string;
  let raw: unknown;
  try {
    text = readFileSync(file, 'utf8');
    raw = parse(text, { version: '1.1' });
  } catch (err) {
    throw new ConfigError(
      `${file}: cannot be read or parsed: ${(err as Error).message}; fix the profile or point takeover.profile elsewhere`,
      { cause: err },
    );
  }
  return {
    file,
    digest: `sha256:${createHash('sha256').update(text).digest('hex')}`,
    profile: parseProfile(raw, file),
  };
}

/** The profile a manifest directory carries in `rules/profile.yaml`, or undefined when it carries none. */
export function findProfile(manifestDir: string): LoadedProfile | undefined {
  const file = profileFile(manifestDir);
  return existsSync(file) ? loadProfile(file) : undefined;
}

/** The value a rule's object reports once it has reconciled `commit` of `ref` (for messages and test helpers). */
export function expectedRevisionValue(rule: RevisionRule, commit: string, ref: string): string {
  return rule.format ? rule.format.replaceAll('{ref}', ref).replaceAll('{commit}', commit) : commit;
}

/** Whether `observed` reports `commit` of `ref` under the rule. */
export function revisionMatches(
  rule: RevisionRule,
  observed: string | undefined,
  commit: string,
  ref: string,
): boolean {
  if (observed === undefined) return false;
  if (rule.format) return observed === expectedRevisionValue(rule, commit, ref);
  return rule.match === 'exact' ? observed === commit : observed.endsWith(commit);
}

/**
 * Why a revision rule does not hold on its object (read by the caller), one message per unmet part; empty when it
 * holds. `object` undefined means it does not exist (yet).
 */
export function revisionRuleGaps(
  rule: RevisionRule,
  object: unknown,
  commit: string,
  ref: string,
): { readonly observed: string | undefined; readonly gaps: readonly RuleGap[] } {
  if (object === undefined) return { observed: undefined, gaps: [{ rule: 'revision', message: 'does not exist' }] };
  const v = valueAt(object, rule.path);
  const observed = typeof v === 'string' ? v : undefined;
  const gaps: RuleGap[] = [];
  if (!revisionMatches(rule, observed, commit, ref)) {
    const want = rule.format || rule.match === 'exact' ? expectedRevisionValue(rule, commit, ref) : `…${commit}`;
    gaps.push({ rule: 'revision', message: `${rule.path} is ${JSON.stringify(v ?? null)}, expected ${want}` });
  }
  for (const c of rule.conditions) {
    const message = conditionGap(object, c);
    if (message) gaps.push({ rule: 'condition', message });
  }
  if (gaps.length > 0) {
    const quoted = rule.quote.flatMap((p) => quotedValues(valueAt(object, p)));
    if (quoted.length > 0) gaps.push({ rule: 'condition', message: `reports: ${quoted.join('; ')}` });
  }
  return { observed, gaps };
}

/** A reported value as quoted text: a condition list as `type: message` each, a string as itself (200 chars). */
function quotedValues(v: unknown): string[] {
  if (typeof v === 'string' && v !== '') return [v.slice(0, 200)];
  if (!Array.isArray(v)) return [];
  return v.flatMap((c: { type?: unknown; message?: unknown }) =>
    typeof c?.message === 'string' ? [`${String(c.type ?? '')}: ${c.message.slice(0, 200)}`] : [],
  );
}

/** One unmet part of a revision rule. */
export interface RuleGap {
  readonly rule: 'revision' | 'condition';
  readonly message: string;
}

type Conditions = { type: string; status: string; message?: string }[];

/** Why one condition rule does not hold on `obj`, or undefined when it holds. */
export function conditionGap(obj: unknown, c: ConditionRule): string | undefined {
  if (c.conditionType) {
    const cond = (valueAt(obj, 'status.conditions') as Conditions | undefined)?.find((x) => x.type === c.conditionType);
    if (cond?.status === c.equals) return undefined;
    const why = cond?.message ? ` (${cond.message.slice(0, 200)})` : '';
    return `condition ${c.conditionType} is ${cond?.status ?? 'missing'}, expected ${c.equals}${why}`;
  }
  if (!c.path) return undefined;
  const got = valueAt(obj, c.path);
  return got === c.equals ? undefined : `${c.path} is ${JSON.stringify(got ?? null)}, expected ${c.equals}`;
}

/** Whether a pushed object (kind and name) is push-only under the profile; its reason when it is. */
export function pushOnlyReason(profile: Profile, kind: string, name: string): string | undefined {
  return profile.pushOnly.find((r) => r.kind === kind && (r.name === undefined || r.name === name))?.reason;
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

/** JSON Schema (draft 2020-12) of a profile file as written, from the same zod schema. */
export function profileJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ProfileSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}
