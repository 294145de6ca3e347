import { ConfigError } from '@baton/errors';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';

/** API group, version and kind of the controller's configuration object. */
export const GITSYNC_GROUP = 'baton.dev';
/** Served and stored version. */
export const GITSYNC_VERSION = 'v1alpha1';
/** `apiVersion` of a GitSync. */
export const GITSYNC_API_VERSION = `${GITSYNC_GROUP}/${GITSYNC_VERSION}`;

/** The `spec` of a GitSync: where to pull from and how to apply. Defaults live here. */
export const GitSyncSpecSchema = z.strictObject({
  url: z
    .string()
    .regex(/^(https?|file):\/\//)
    .describe('Git repository URL: https://, http:// (loopback tests) or file://'),
  ref: z
    .strictObject({
      branch: z.string().min(1).optional().describe('Branch to follow'),
      tag: z.string().min(1).optional().describe('Tag to follow'),
      commit: z
        .string()
        .regex(/^[0-9a-f]{40}$/)
        .optional()
        .describe('Exact commit SHA to pin'),
    })
    .default({ branch: 'main' })
    .describe('Exactly one of branch, tag or commit; default branch main'),
  path: z.string().default('.').describe('Folder in the repository whose YAML files are applied'),
  intervalSeconds: z.int().min(5).max(86_400).default(60).describe('Poll interval in seconds'),
  prune: z.boolean().default(true).describe('Delete objects that were removed from Git'),
  secretRef: z
    .strictObject({
      name: z.string().min(1).describe('Secret with username+password or token (read-only pull credential)'),
    })
    .optional()
    .describe('Pull credential in the GitSync namespace'),
  webhookSecretRef: z
    .strictObject({ name: z.string().min(1).describe('Secret whose key "secret" holds the webhook HMAC key') })
    .optional()
    .describe('Enables the HMAC-verified webhook that triggers an immediate sync'),
  suspend: z.boolean().default(false).describe('Stop syncing without deleting anything'),
});
/** A validated GitSync spec. */
export type GitSyncSpec = z.infer<typeof GitSyncSpecSchema>;

const ConditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.int().optional(),
});
/** A status condition (Kubernetes metav1.Condition shape). */
export type Condition = z.infer<typeof ConditionSchema>;

/** The status the controller writes. */
export const GitSyncStatusSchema = z.object({
  observedGeneration: z.int().optional(),
  lastAppliedRevision: z.string().optional().describe('Commit SHA whose objects are all applied'),
  lastAttemptedRevision: z.string().optional().describe('Commit SHA of the latest sync attempt'),
  lastSyncTime: z.string().optional(),
  lastError: z.string().optional(),
  inventoryCount: z.int().optional(),
  inventory: z
    .array(z.string())
    .optional()
    .describe('Applied objects as apiVersion/kind/namespace/name (namespace empty when cluster-scoped)'),
  driftedObjects: z.array(z.string()).optional().describe('Objects changed outside Git and reverted at the last sync'),
  pruneRefused: z
    .array(z.string())
    .optional()
    .describe('Objects the controller refused to prune (its own identity, RBAC or opt-out)'),
  conditions: z.array(ConditionSchema).optional(),
});
/** GitSync status. */
export type GitSyncStatus = z.infer<typeof GitSyncStatusSchema>;

/** A GitSync object as read from the apiserver. */
export interface GitSync {
  apiVersion: string;
  kind: 'GitSync';
  metadata: { name: string; namespace: string; generation?: number; uid?: string; resourceVersion?: string };
  spec: unknown;
  status?: GitSyncStatus;
}

/**
 * Validates a GitSync spec and applies defaults.
 * @throws ConfigError naming the object and the field path.
 */
export function parseGitSyncSpec(spec: unknown, where: string): GitSyncSpec {
  const r = GitSyncSpecSchema.safeParse(spec);
  if (!r.success)
    throw new ConfigError(
      `${where}: ${fromZodError(r.error, { prefix: 'invalid spec' }).message}; fix the GitSync object`,
    );
  const refs = [r.data.ref.branch, r.data.ref.tag, r.data.ref.commit].filter((x) => x !== undefined);
  if (refs.length !== 1)
    throw new ConfigError(`${where}: spec.ref must set exactly one of branch, tag or commit (found ${refs.length})`);
  return r.data;
}

/**
 * Turns a JSON Schema from `z.toJSONSchema` into a Kubernetes structural OpenAPI v3 schema: drops
 * keywords the apiserver rejects (`$schema`, `additionalProperties: false` beside `properties`)
 * and keeps the ones it understands.
 */
export function toStructuralSchema(js: Record<string, unknown>): Record<string, unknown> {
  const keep = [
    'type',
    'description',
    'default',
    'enum',
    'pattern',
    'minimum',
    'maximum',
    'minLength',
    'maxLength',
    'format',
    'required',
  ];
  const out: Record<string, unknown> = {};
  for (const k of keep) if (js[k] !== undefined) out[k] = js[k];
  if (out.type === 'integer' && typeof out.maximum === 'number' && out.maximum > Number.MAX_SAFE_INTEGER)
    delete out.maximum;
  if (out.type === 'integer' && typeof out.minimum === 'number' && out.minimum < Number.MIN_SAFE_INTEGER)
    delete out.minimum;
  if (js.properties) {
    out.properties = Object.fromEntries(
      Object.entries(js.properties as Record<string, Record<string, unknown>>).map(([k, v]) => [
        k,
        toStructuralSchema(v),
      ]),
    );
  }
  if (js.items) out.items = toStructuralSchema(js.items as Record<string, unknown>);
  return out;
}

/** The GitSync CustomResourceDefinition, with its OpenAPI schema generated from the zod schemas. */
export function gitSyncCrd(): Record<string, unknown> {
  const spec = toStructuralSchema(z.toJSONSchema(GitSyncSpecSchema, { io: 'input' }) as Record<string, unknown>);
  const status = toStructuralSchema(z.toJSONSchema(GitSyncStatusSchema, { io: 'input' }) as Record<string, unknown>);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gitsyncs.${GITSYNC_GROUP}` },
    spec: {
      group: GITSYNC_GROUP,
      names: { kind: 'GitSync', listKind: 'GitSyncList', plural: 'gitsyncs', singular: 'gitsync', shortNames: ['gs'] },
      scope: 'Namespaced',
      versions: [
        {
          name: GITSYNC_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Revision', type: 'string', jsonPath: '.status.lastAppliedRevision' },
            { name: 'Objects', type: 'integer', jsonPath: '.status.inventoryCount' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}
