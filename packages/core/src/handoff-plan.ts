import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '@baton/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';

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

/** Where the controller reports the revision it applied. */
export const ControllerStatusSchema = z.strictObject({
  apiVersion: z.string().default('v1'),
  kind: z.string().default('ConfigMap'),
  namespace: Name.optional().describe('@default the controller namespace'),
  name: Name,
  revisionPath: z
    .string()
    .default('data.revision')
    .describe(
      'dotted path of the applied revision (Flux: status.lastAppliedRevision); a value ending in the commit (Flux: main@sha1:<commit>) matches',
    ),
});

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
    }),
    pull: z.strictObject({
      credential: z
        .strictObject({
          secretName: Name.describe(
            'Secret holding the read-only Git credential: in the manifest set, or made from fromFile',
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
    controller: z.strictObject({
      name: Name.describe('the controller Deployment'),
      namespace: Name,
      serviceAccount: Name,
      fieldManager: z.string().default('baton-controller').describe('field manager the controller applies with'),
      status: ControllerStatusSchema,
      privilege: z
        .enum(['scoped', 'cluster-admin'])
        .default('scoped')
        .describe(
          'what the controller may apply from Git: only the roles the install declares (scoped), or cluster-admin (Flux’s upstream choice); cluster-admin lets the set bind the controller’s ServiceAccounts to it, and the audit event records the choice',
        ),
    }),
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
    audit: z.strictObject({
      logPath: z.string().min(1).describe('audit log file (relative to the plan)'),
      signingKeyPath: z.string().min(1).describe('Ed25519 signing key file (relative to the plan)'),
      origin: z.string().default('baton.dev/handoff'),
    }),
    journalDir: z.string().default('.baton/journal').describe('local step journal (relative to the plan)'),
  })
  .refine((p) => p.push.fieldManager !== p.controller.fieldManager, {
    message:
      'push.fieldManager and controller.fieldManager must differ: the takeover is proven by the controller owning what the push wrote, which a shared name would fake',
    path: ['controller', 'fieldManager'],
  })
  .describe('baton handoff plan');

/** A validated handoff plan with defaults applied. */
export type HandoffPlan = z.infer<typeof HandoffPlanSchema>;
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
  return {
    file,
    plan: {
      ...p,
      cluster: { ...p.cluster, ...(p.cluster.kubeconfig ? { kubeconfig: abs(p.cluster.kubeconfig) } : {}) },
      push: {
        ...p.push,
        manifests: abs(p.push.manifests),
        secrets: p.push.secrets.map((x) => ({ ...x, fromFile: abs(x.fromFile) })),
      },
      pull: {
        ...p.pull,
        credential: {
          ...p.pull.credential,
          ...(p.pull.credential.fromFile ? { fromFile: abs(p.pull.credential.fromFile) } : {}),
        },
      },
      takeover: { ...p.takeover, ...(p.takeover.profile ? { profile: abs(p.takeover.profile) } : {}) },
      audit: { ...p.audit, logPath: abs(p.audit.logPath), signingKeyPath: abs(p.audit.signingKeyPath) },
      journalDir: abs(p.journalDir),
    },
  };
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
