// The handoff plan file's schema (zod, from which schemas/handoff-plan.schema.json is generated): what a plan may say,
// with its defaults. Reading a plan, resolving it against its profile and loading it is ./handoff-plan.ts.
import { DEFAULT_ORIGIN } from '@baton/audit';
import { z } from 'zod';
import { PlanImageRuleSchema } from './images/image-rules.js';
import { KeylessPolicySchema } from './images/keyless-policy.js';
import { ProvenancePolicySchema } from './images/provenance-policy.js';

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

/** A handoff plan as written (defaults optional). */
export type HandoffPlanInput = z.input<typeof HandoffPlanSchema>;
