import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { DEFAULT_ORIGIN, type SignerSpec } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';
import { PlanImageRuleSchema } from './images/image-rules.js';
import { type KeylessPolicy, KeylessPolicySchema } from './images/keyless-policy.js';
import { ProvenancePolicySchema } from './images/provenance-policy.js';
import { fillSource, findProfile, type LoadedProfile, loadProfile } from './profile.js';

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a lowercase DNS name');

/** The Git source the controller pulls from, and the read-only credential it pulls with. */
export const PullSourceSchema = z.strictObject({
  url: z.string().min(1).describe('Git repository URL, without credentials'),
  ref: z.string().min(1).default('main').describe('branch or tag the controller follows'),
  path: z.string().default('.').describe('directory in the repository the controller applies'),
  revision: z
    .string()
    .regex(/^([0-9a-f]{40}|[0-9a-f]{64})$/, 'must be a full Git commit id')
    .optional()
    .describe('commit the controller must reconcile; resolved from `ref` with `git ls-remote` when absent'),
});

/** Where the controller reports the revision it applied. Every field a plan omits comes from the profile. */
export const ControllerStatusSchema = z.strictObject({
  apiVersion: z.string().optional().describe("@default the profile's revision object, else v1"),
  kind: z.string().optional().describe("@default the profile's revision object, else ConfigMap"),
  namespace: Name.optional().describe('@default the controller namespace'),
  name: Name.optional().describe("@default the profile's revision object"),
  revisionPath: z
    .string()
    .optional()
    .describe(
      "dotted path of the applied revision (Flux: status.lastAppliedRevision); a value ending in the commit (Flux: main@sha1:<commit>) matches; @default the profile's revision path, else data.revision",
    ),
});

/**
 * The controller that takes over. Every field is optional in a plan: what it omits comes from the profile's
 * `controller` block and `revision` rule (`rules/profile.yaml` of push.manifests, or takeover.profile).
 */
export const ControllerSchema = z
  .strictObject({
    name: Name.optional().describe("the controller Deployment; @default the profile's controller.name"),
    namespace: Name.optional().describe("@default the profile's namespace"),
    serviceAccount: Name.optional().describe("@default the profile's controller.serviceAccount"),
    fieldManager: z
      .string()
      .optional()
      .describe(
        "field manager the controller applies with; @default the profile's first fieldManager, else baton-controller",
      ),
    status: ControllerStatusSchema.optional(),
    privilege: z
      .enum(['scoped', 'cluster-admin'])
      .optional()
      .describe(
        'what the controller may apply from Git: only the roles the install declares (scoped), or cluster-admin (Flux’s upstream choice); cluster-admin lets the set bind the controller’s ServiceAccounts to it, and the audit event records the choice; @default scoped',
      ),
  })
  .describe('the controller that takes over; @default the profile’s controller block');

/** The audit log's origin when the plan names none (its checkpoints and trusted-keys file carry it). */
export const DEFAULT_HANDOFF_LOG_ORIGIN = DEFAULT_ORIGIN;

/**
 * A handoff plan: the cluster, the push (what is installed, with which credential), the pull (which controller
 * takes over from which Git source, with which credential), the time limits and the audit log.
 */
export const HandoffPlanSchema = z
  .strictObject({
    apiVersion: z.literal('baton.dev/v1alpha1'),
    kind: z.literal('HandoffPlan'),
    cluster: z
      .strictObject({
        name: Name.describe('cluster name in audit records'),
        kubeconfig: z.string().optional().describe('kubeconfig path (relative to the plan); --kubeconfig overrides'),
        kubeconfigContent: z
          .string()
          .min(1)
          .optional()
          .describe(
            'kubeconfig text (YAML or JSON) held in memory, e.g. a Pulumi output, instead of a path; never logged; --kubeconfig overrides',
          ),
        context: z.string().optional().describe('kubeconfig context; --context overrides'),
      })
      .refine((c) => c.kubeconfig === undefined || c.kubeconfigContent === undefined, {
        message: 'set kubeconfig (a path) or kubeconfigContent (the text), not both',
        path: ['kubeconfigContent'],
      }),
    batonNamespace: Name.default('baton-system').describe('namespace of the lock, receipt and bootstrap identity'),
    push: z.strictObject({
      credential: z
        .literal('bootstrap-token')
        .describe(
          'the push uses a minted, scoped, 600 s ServiceAccount token that is revoked after takeover; nothing else is allowed',
        ),
      profile: Name.describe('controller profile name (bootstrap-manifests/<profile>)'),
      manifests: z.string().min(1).describe('directory of the manifests to push (relative to the plan)'),
      fieldManager: z.string().default('baton-bootstrap'),
      budgetSeconds: z
        .number()
        .int()
        .positive()
        .max(600)
        .default(300)
        .describe('push window: the most seconds the bootstrap credential may live'),
      secrets: z
        .array(
          z.strictObject({
            name: Name,
            fromFile: z.string().min(1).describe('YAML map of key: value (relative to the plan); never logged'),
          }),
        )
        .default([])
        .describe('push-only Secrets in the controller namespace that never live in Git (e.g. a webhook key)'),
      images: z
        .strictObject({
          trustedKeys: z
            .string()
            .min(1)
            .optional()
            .describe(
              "trusted-keys file (relative to the plan; `baton audit keygen` writes one) whose keys the push set's images must be signed by, instead of the profile's imageTrust",
            ),
          keyless: KeylessPolicySchema.optional().describe(
            "keyless signatures the push set's images may carry instead (trustedRoot relative to the plan); with trustedKeys, either verifies; either replaces the profile's imageTrust",
          ),
          rules: z
            .array(PlanImageRuleSchema)
            .min(1)
            .optional()
            .describe(
              'per-repository rules, checked in order before trustedKeys and keyless: who signs those images, or why they are pushed unsigned; with trustedKeys or keyless, replaces the profile’s imageTrust',
            ),
          provenance: ProvenancePolicySchema.optional(),
          credentials: z
            .string()
            .min(1)
            .optional()
            .describe(
              'Docker config.json whose logins (auths, credHelpers, credsStore) baton reads signatures with (relative to the plan); @default $DOCKER_CONFIG/config.json, else ~/.docker/config.json, else anonymous',
            ),
          mirrors: z
            .record(z.string().min(1), z.url({ protocol: /^https?$/ }))
            .default({})
            .describe(
              'where baton reads a registry host’s images and signatures instead of https://<host>, e.g. {"ghcr.io": "https://mirror.internal"} (http is allowed: signatures are verified end to end)',
            ),
        })
        .prefault({})
        .describe("how the push set's images are verified before anything is minted"),
    }),
    pull: z.strictObject({
      credential: z
        .strictObject({
          secretName: Name.optional().describe(
            "Secret holding the read-only Git credential: in the manifest set, or made from fromFile; @default the profile's controller.pullSecret",
          ),
          fromFile: z
            .string()
            .min(1)
            .optional()
            .describe('YAML map of key: value (relative to the plan); never logged'),
          labels: z
            .record(z.string(), z.string())
            .optional()
            .describe(
              'labels of the Secret made from fromFile, e.g. Argo CD’s `argocd.argoproj.io/secret-type: repository`',
            ),
        })
        .describe('the pull credential: must differ from the push credential'),
      source: PullSourceSchema,
    }),
    controller: ControllerSchema.optional(),
    takeover: z
      .strictObject({
        timeoutSeconds: z.number().positive().default(300),
        requireOwnership: z
          .boolean()
          .default(true)
          .describe('fail when the controller does not own every pushed object'),
        profile: z
          .string()
          .min(1)
          .optional()
          .describe(
            'controller profile whose takeover rules are checked too (a profile folder or its rules/profile.yaml, relative to the plan); @default push.manifests/rules/profile.yaml when it exists',
          ),
      })
      .prefault({}),
    audit: z
      .strictObject({
        logPath: z.string().min(1).describe('audit log file (relative to the plan)'),
        signingKeyPath: z
          .string()
          .min(1)
          .optional()
          .describe('Ed25519 signing key file (relative to the plan); or give signer, for a key that is not in a file'),
        signer: z
          .strictObject({
            command: z
              .array(z.string().min(1))
              .min(1)
              .optional()
              .describe(
                'program and arguments, run without a shell (a relative program path resolves against the plan): reads the message on stdin, prints the base64 Ed25519 signature',
              ),
            pkcs11: z
              .string()
              .startsWith('pkcs11:', 'a PKCS#11 URI starts with "pkcs11:" (RFC 7512)')
              .optional()
              .describe(
                'RFC 7512 URI of an Ed25519 key in a PKCS#11 token, with module-path and pin-source (or BATON_PKCS11_PIN): the key signs inside the token',
              ),
            publicKey: z
              .string()
              .min(1)
              .optional()
              .describe(
                'verifier key (name+hash+base64) of the signing key; every signature is checked against it (required with command; with pkcs11, the token must hold this key)',
              ),
            timeoutSeconds: z.number().positive().max(600).default(30).describe('how long a signer command may take'),
          })
          .refine((x) => (x.command === undefined) !== (x.pkcs11 === undefined), {
            message: 'give exactly one of command (a signer command) and pkcs11 (a key in a PKCS#11 token)',
          })
          .refine((x) => x.command === undefined || x.publicKey !== undefined, {
            message:
              'a signer command needs publicKey: the verifier key it signs with (baton audit keygen --public-key prints it)',
            path: ['publicKey'],
          })
          .optional()
          .describe('a signing key that is not in a file: a KMS or HSM behind a command, or a PKCS#11 token'),
        origin: z.string().default(DEFAULT_HANDOFF_LOG_ORIGIN),
      })
      .refine((a) => (a.signingKeyPath === undefined) !== (a.signer === undefined), {
        message:
          'give exactly one of signingKeyPath (a key file from `baton audit keygen`) and signer (a signer command or a PKCS#11 key)',
      }),
    journalDir: z.string().default('.baton/journal').describe('local step journal (relative to the plan)'),
  })
  .describe('baton handoff plan');

type ParsedPlan = z.infer<typeof HandoffPlanSchema>;

/** The controller block of a validated plan: the plan's fields over the profile's. */
export interface ResolvedController {
  /** The controller Deployment. */
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Field manager the controller applies with. */
  readonly fieldManager: string;
  readonly status: {
    readonly apiVersion: string;
    readonly kind: string;
    readonly namespace?: string;
    readonly name: string;
    readonly revisionPath: string;
  };
  readonly privilege: 'scoped' | 'cluster-admin';
}

/** The audit block of a validated plan: the log, its origin, and where the signing key lives. */
export interface ResolvedAudit {
  readonly logPath: string;
  readonly origin: string;
  readonly signer: SignerSpec;
}

/** A validated handoff plan with defaults applied, its controller block filled from the profile. */
export type HandoffPlan = Omit<ParsedPlan, 'controller' | 'pull' | 'audit'> & {
  readonly audit: ResolvedAudit;
  readonly controller: ResolvedController;
  readonly pull: Omit<ParsedPlan['pull'], 'credential'> & {
    readonly credential: ParsedPlan['pull']['credential'] & {
      readonly secretName: string;
      /** The profile's pullSecretData, filled from pull.source: keys the Secret made from fromFile carries too. */
      readonly profileData?: Readonly<Record<string, string>>;
    };
  };
};
/** A handoff plan as written (defaults optional). */
export type HandoffPlanInput = z.input<typeof HandoffPlanSchema>;

/** A plan with its file and its paths made absolute. */
export interface LoadedPlan {
  /** The plan file, or `<inline>`. */
  readonly file: string;
  readonly plan: HandoffPlan;
}

/**
 * Validates a plan object. Relative paths resolve against `baseDir`.
 * @throws {ConfigError} naming the file and the field.
 */
export function parseHandoffPlan(input: unknown, file = '<inline>', baseDir = process.cwd()): LoadedPlan {
  const r = HandoffPlanSchema.safeParse(input);
  if (!r.success) {
    throw new ConfigError(
      `${file}: ${fromZodError(r.error, { prefix: 'invalid handoff plan', prefixSeparator: ': ' }).message}`,
      {
        details: { file, issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
      },
    );
  }
  const p = r.data;
  const abs = (x: string) => (isAbsolute(x) ? x : resolve(baseDir, x));
  const keylessAbs = (k: KeylessPolicy) => ({ ...k, trustedRoot: abs(k.trustedRoot) });
  const manifests = abs(p.push.manifests);
  const takeover = { ...p.takeover, ...(p.takeover.profile ? { profile: abs(p.takeover.profile) } : {}) };
  const profile = takeover.profile ? loadProfile(takeover.profile) : findProfile(manifests);
  // Without a profile, the cause of every missing field below may be a folder that is not there: say that first.
  const missing = profile ? undefined : manifestsProblem(manifests);
  if (missing)
    throw new ConfigError(
      `${file}: push.manifests ${manifests} ${missing}; point push.manifests (relative to the plan) at the folder of the manifests to push (baton init writes it as push/)`,
      { details: { file, issues: [{ path: 'push.manifests', message: missing }] } },
    );
  const controller = resolveController(p, profile, file);
  return {
    file,
    plan: {
      ...p,
      cluster: { ...p.cluster, ...(p.cluster.kubeconfig ? { kubeconfig: abs(p.cluster.kubeconfig) } : {}) },
      push: {
        ...p.push,
        manifests,
        secrets: p.push.secrets.map((x) => ({ ...x, fromFile: abs(x.fromFile) })),
        images: {
          ...p.push.images,
          ...(p.push.images.trustedKeys ? { trustedKeys: abs(p.push.images.trustedKeys) } : {}),
          ...(p.push.images.credentials ? { credentials: abs(p.push.images.credentials) } : {}),
          ...(p.push.images.keyless ? { keyless: keylessAbs(p.push.images.keyless) } : {}),
          ...(p.push.images.rules
            ? {
                rules: p.push.images.rules.map((r) => ({
                  ...r,
                  ...(r.trustedKeys ? { trustedKeys: abs(r.trustedKeys) } : {}),
                  ...(r.keyless ? { keyless: keylessAbs(r.keyless) } : {}),
                })),
              }
            : {}),
        },
      },
      pull: {
        ...p.pull,
        credential: {
          ...p.pull.credential,
          secretName: required(p.pull.credential.secretName, profile?.profile.controller?.pullSecret, {
            file,
            field: 'pull.credential.secretName',
            profileField: 'controller.pullSecret',
          }),
          ...(p.pull.credential.fromFile ? { fromFile: abs(p.pull.credential.fromFile) } : {}),
          ...pullSecretDefaults(p, profile),
        },
      },
      controller,
      takeover,
      audit: resolveAudit(p.audit, abs),
      journalDir: abs(p.journalDir),
    },
  };
}

/** The plan's audit block with absolute paths: a key file, a signer command (a relative program path too), a token. */
function resolveAudit(a: ParsedPlan['audit'], abs: (p: string) => string): ResolvedAudit {
  const base = { logPath: abs(a.logPath), origin: a.origin };
  if (a.signer?.pkcs11) {
    const { publicKey } = a.signer;
    return {
      ...base,
      signer: {
        kind: 'pkcs11',
        uri: a.signer.pkcs11,
        // C2SP tlog-checkpoint: a log's key is named for its origin, unless the plan's publicKey names it otherwise.
        keyName: publicKey?.slice(0, Math.max(0, publicKey.indexOf('+'))) || a.origin,
        ...(publicKey ? { verifierKey: publicKey } : {}),
      },
    };
  }
  if (a.signer?.command) {
    const [program, ...args] = a.signer.command;
    const path = program!.includes('/') ? abs(program!) : program!;
    return {
      ...base,
      signer: {
        kind: 'command',
        command: [path, ...args],
        verifierKey: a.signer.publicKey!,
        timeoutSeconds: a.signer.timeoutSeconds,
      },
    };
  }
  return { ...base, signer: { kind: 'key-file', path: abs(a.signingKeyPath!) } };
}

/**
 * A validated plan as input again, for a process that parses it anew (the fleet's shard pods): every field is
 * already in input form except the audit block, whose resolved signer goes back to the field it came from.
 */
export function planAsInput(plan: HandoffPlan): HandoffPlanInput {
  const { signer, ...audit } = plan.audit;
  const input =
    signer.kind === 'key-file'
      ? { signingKeyPath: signer.path }
      : signer.kind === 'command'
        ? {
            signer: {
              command: [...signer.command],
              publicKey: signer.verifierKey,
              ...(signer.timeoutSeconds !== undefined ? { timeoutSeconds: signer.timeoutSeconds } : {}),
            },
          }
        : { signer: { pkcs11: signer.uri, ...(signer.verifierKey ? { publicKey: signer.verifierKey } : {}) } };
  return { ...plan, audit: { ...audit, ...input } } as HandoffPlanInput;
}

/** What the profile adds to a pull Secret made from fromFile: its labels (unless the plan has some) and data keys. */
function pullSecretDefaults(
  p: ParsedPlan,
  loaded: LoadedProfile | undefined,
): { labels?: Record<string, string>; profileData?: Record<string, string> } {
  const block = loaded?.profile.controller;
  if (!p.pull.credential.fromFile || !block) return {};
  const labels = p.pull.credential.labels ?? block.pullSecretLabels;
  const data = block.pullSecretData;
  return {
    ...(labels ? { labels } : {}),
    ...(data
      ? { profileData: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, fillSource(v, p.pull.source)])) }
      : {}),
  };
}

/**
 * The plan's controller block over the profile's: the profile gives the namespace, the controller block, the
 * revision object (status) and the field manager; a plan field overrides each one.
 * @throws {ConfigError} naming the field when neither gives it, or when the field managers clash.
 */
function resolveController(p: ParsedPlan, loaded: LoadedProfile | undefined, file: string): ResolvedController {
  const c = p.controller ?? {};
  const profile = loaded?.profile;
  const need = (value: string | undefined, fallback: string | undefined, field: string, profileField: string) =>
    required(value, fallback, { file, field: `controller.${field}`, profileField });
  const rev = profile?.revision;
  const st = c.status ?? {};
  const statusNamespace = st.namespace ?? rev?.object.namespace;
  const resolved: ResolvedController = {
    name: need(c.name, profile?.controller?.name, 'name', 'controller.name'),
    namespace: need(c.namespace, profile?.namespace, 'namespace', 'namespace'),
    serviceAccount: need(
      c.serviceAccount,
      profile?.controller?.serviceAccount,
      'serviceAccount',
      'controller.serviceAccount',
    ),
    fieldManager: c.fieldManager ?? profile?.fieldManagers[0] ?? 'baton-controller',
    status: {
      apiVersion: st.apiVersion ?? rev?.object.apiVersion ?? 'v1',
      kind: st.kind ?? rev?.object.kind ?? 'ConfigMap',
      ...(statusNamespace !== undefined ? { namespace: statusNamespace } : {}),
      name: need(st.name, rev?.object.name, 'status.name', 'revision.object.name'),
      revisionPath: st.revisionPath ?? rev?.path ?? 'data.revision',
    },
    privilege: c.privilege ?? 'scoped',
  };
  if (resolved.fieldManager === p.push.fieldManager)
    throw new ConfigError(
      `${file}: invalid handoff plan: push.fieldManager and controller.fieldManager must differ (both are ${resolved.fieldManager}): the takeover is proven by the controller owning what the push wrote, which a shared name would fake; set controller.fieldManager to the controller's own field manager`,
      {
        details: { file, issues: [{ path: 'controller.fieldManager', message: 'must differ from push.fieldManager' }] },
      },
    );
  return resolved;
}

/** What is wrong with a `push.manifests` folder, or undefined when it holds manifests. */
function manifestsProblem(dir: string): string | undefined {
  let files: string[];
  try {
    if (!statSync(dir).isDirectory()) return 'is not a folder';
    files = readdirSync(dir);
  } catch {
    return 'does not exist';
  }
  return files.some((f) => /\.(ya?ml|json)$/.test(f)) ? undefined : 'holds no manifest (*.yaml, *.yml or *.json)';
}

/** `value`, else the profile's `fallback`; neither is a ConfigError saying where to set it. */
function required(
  value: string | undefined,
  fallback: string | undefined,
  at: { readonly file: string; readonly field: string; readonly profileField: string },
): string {
  const v = value ?? fallback;
  if (v !== undefined) return v;
  throw new ConfigError(
    `${at.file}: invalid handoff plan: ${at.field} is missing and no controller profile gives it (${at.profileField} of rules/profile.yaml in push.manifests, or of takeover.profile); set ${at.field} in the plan or push a profile that has it`,
    { details: { file: at.file, issues: [{ path: at.field, message: 'missing, and no profile gives it' }] } },
  );
}

/**
 * Reads and validates a YAML (1.1) plan file.
 * @throws {ConfigError} naming the file, the line for YAML errors, and the field for schema errors.
 */
export function loadHandoffPlan(file: string): LoadedPlan {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `cannot read handoff plan ${file}: ${(err as Error).message}; pass --plan with a readable file`,
      { cause: err },
    );
  }
  const doc = parseDocument(text, { version: '1.1' });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new ConfigError(`${file}:${e.linePos?.[0]?.line ?? '?'}: ${e.message}`);
  }
  return parseHandoffPlan(doc.toJS(), file, dirname(resolve(file)));
}

/** The JSON Schema of a plan file, for editors (`schemas/handoff-plan.schema.json`). */
export function handoffPlanJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(HandoffPlanSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}
