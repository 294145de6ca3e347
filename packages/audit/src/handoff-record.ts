import { z } from 'zod';

// RFC 3339 with an explicit offset: a record read back on another machine must mean the same instant.
const Timestamp = z.iso.datetime({ offset: true });
const Sha256Digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be sha256:<64 lowercase hex digits>');
const GitCommit = z.string().regex(/^([0-9a-f]{40}|[0-9a-f]{64})$/, 'must be a full SHA-1 or SHA-256 Git commit id');
const Name = z.string().min(1).max(253);

/** Names of the handoff steps, in the order the engine runs them. Other names are allowed for future steps. */
export const HANDOFF_STEPS = ['plan', 'validate', 'mint', 'push', 'takeover', 'revoke', 'prove', 'record'] as const;

/** A handoff step name: lowercase, kebab-case (`takeover`, `revoke`). */
export const StepNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}$/, 'must be a lowercase kebab-case step name')
  .describe(`handoff step, one of ${HANDOFF_STEPS.join(', ')} (or a later step)`);

/** How a handoff ended. */
export const HandoffOutcome = {
  handedOff: 'handed-off',
  failed: 'failed',
  aborted: 'aborted',
  tampered: 'tampered',
} as const;
/**
 * How a handoff ended: `handed-off`, `failed`, `aborted`, or `tampered` (the post-close check found pushed objects
 * rewritten during the push window; `tampering` says what and how it was repaired or stopped).
 */
export type HandoffOutcome = (typeof HandoffOutcome)[keyof typeof HandoffOutcome];

/** The cluster a handoff ran against. */
export const ClusterSchema = z.strictObject({
  name: Name.describe('cluster name as the fleet knows it; the CloudEvent subject is cluster/<name>'),
  server: z.url({ protocol: /^https?$/ }).describe('API server URL'),
  caFingerprint: Sha256Digest.optional().describe(
    'SHA-256 of the API server CA certificate (DER); absent when the kubeconfig names no CA (the system trust store)',
  ),
});

/** Who ran the handoff and from where. */
export const ActorSchema = z.strictObject({
  user: Name.describe('the person or CI identity that ran it'),
  host: Name.describe('the machine it ran on'),
  via: z.enum(['cli', 'pulumi', 'fleet', 'controller']).describe('the entry point'),
  pulumi: z
    .strictObject({ stack: Name, urn: z.string().startsWith('urn:pulumi:') })
    .optional()
    .describe('the Pulumi stack and resource URN, when run inside `pulumi up`'),
  fleetRunId: Name.optional().describe('the fleet run this handoff belonged to'),
  batonVersion: z.string().max(64).optional(),
});

/** The declared plan: what the push installs and what the pull controller takes over. */
export const PlanSchema = z.strictObject({
  push: z.strictObject({
    profile: Name.describe('bootstrap-manifests profile that was pushed'),
    bundleDigest: Sha256Digest.describe('SHA-256 of the rendered manifest bundle'),
    objectCount: z.number().int().nonnegative().describe('objects in the bundle'),
    profileDigest: Sha256Digest.optional().describe(
      'SHA-256 of the profile file whose takeover rules were checked (absent: only the plan’s controller.status)',
    ),
    controller: z.strictObject({
      name: Name,
      namespace: Name,
      image: z.string().min(1).max(512).describe('image reference without digest'),
      imageDigest: Sha256Digest.optional().describe(
        'digest of the controller image that was pushed; absent only where the profile pins an exact release tag because upstream publishes no digest (image then carries the tag)',
      ),
    }),
    images: z
      .strictObject({
        verification: z
          .enum(['verified', 'skipped', 'no-policy'])
          .describe(
            'verified: every image the push runs was signed by a key or identity of the trust policy, or is listed in unsigned by a rule of it; skipped: --insecure-skip-image-verify; no-policy: no keys were declared',
          ),
        verified: z
          .array(
            z.strictObject({
              image: z.string().min(1).max(512),
              digest: Sha256Digest,
              signedBy: z
                .string()
                .min(1)
                .max(512)
                .describe('verifier key whose signature verified, or the keyless identity (<subject> from <issuer>)'),
              provenance: z
                .strictObject({
                  builder: z.string().min(1).max(512).describe('the builder id the SLSA provenance names'),
                  source: z.string().min(1).max(2048).optional().describe('the source repository it names'),
                  attestation: Sha256Digest.describe('the attestation’s referrer manifest'),
                })
                .optional()
                .describe(
                  'the SLSA provenance v1 attestation that verified with the signature, when the trust policy asks for one',
                ),
            }),
          )
          .max(32),
        unsigned: z
          .array(
            z.strictObject({
              image: z.string().min(1).max(512),
              digest: Sha256Digest,
              reason: z.string().min(1).max(512).describe('why the trust policy’s rule lets it through unsigned'),
            }),
          )
          .max(32)
          .optional()
          .describe('images pushed without a signature because a rule of the trust policy says so, by digest'),
      })
      .optional()
      .describe(
        'how the images were checked before anything was minted (absent in events recorded before baton verified images)',
      ),
  }),
  pull: z.strictObject({
    source: z.strictObject({
      url: z.string().min(1).max(2048).describe('Git repository the controller pulls from (no credentials)'),
      ref: z.string().max(255).optional().describe('branch or tag followed'),
      revision: GitCommit.describe('commit the plan was made from'),
      path: z.string().max(1024).describe('directory in the repository'),
    }),
    serviceAccount: z.strictObject({ namespace: Name, name: Name }).describe('identity the controller runs as'),
    privilege: z
      .enum(['scoped', 'cluster-admin'])
      .optional()
      .describe(
        'what the pull side may do: the roles the install declares (scoped), or cluster-admin, chosen in the plan',
      ),
  }),
});

/** One RBAC rule granted to the bootstrap credential. No namespace means cluster-wide. */
export const RbacRuleSchema = z.strictObject({
  namespace: Name.optional(),
  apiGroups: z.array(z.string().max(253)),
  resources: z.array(z.string().min(1).max(253)),
  verbs: z.array(z.string().min(1).max(64)).min(1),
  resourceNames: z.array(Name).optional(),
});

/** The bootstrap credential: identified by fingerprint or JTI, never by the secret itself. */
export const CredentialSchema = z.strictObject({
  kind: z.enum(['serviceaccount-token', 'bootstrap-token', 'aws-sts', 'oidc-token']),
  fingerprint: Sha256Digest.describe('SHA-256 of the credential; the credential itself is never recorded'),
  jti: z.string().max(128).optional().describe('JWT ID (credential-id in the k8s audit log), when the token has one'),
  subject: z.string().max(512).optional().describe('identity the credential authenticates as'),
  audiences: z.array(z.string().min(1).max(512)),
  boundObject: z
    .strictObject({
      kind: z.enum(['Secret', 'Pod', 'Node']),
      namespace: Name.optional(),
      name: Name,
      uid: z.string().min(1).max(64),
    })
    .optional()
    .describe('object whose deletion revokes the token (TokenRequest boundObjectRef)'),
  rbacRules: z.array(RbacRuleSchema).max(64),
  issuedAt: Timestamp,
  expiresAt: Timestamp,
  revokedAt: Timestamp.nullable().describe('null when the credential was not revoked (it lives until expiresAt)'),
  liveSeconds: z.number().nonnegative().describe('seconds from issuedAt to min(revokedAt, expiresAt)'),
  writeWindowSeconds: z
    .number()
    .nonnegative()
    .optional()
    .describe('seconds from issuedAt until admission denied every write by the credential (the push was over)'),
  privilegeWindowSeconds: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      'seconds from issuedAt until the credential, asking as itself, was denied every read and write of the plan (its bindings deleted after the push); absent in events written before baton recorded it',
    ),
});

/** The admission-level confinement of the bootstrap identity to the plan. */
export const ConfinementSchema = z.strictObject({
  method: z.literal('validating-admission-policy'),
  policyName: Name.describe('the ValidatingAdmissionPolicy (and binding) that confined the identity'),
  planDigest: Sha256Digest.describe('the manifest set the policy allowed, and nothing else'),
  allowedObjectCount: z.number().int().nonnegative(),
  allowedObjects: z.array(z.string().min(1).max(512)).max(64).describe('sample of the writes allowed'),
  probeDenied: z.boolean().describe('a write outside the plan, made with the credential before the push, was denied'),
  installedAt: Timestamp,
  closedAt: Timestamp.nullable().describe('when the policy was switched to deny every write (end of the push)'),
  removedAt: Timestamp.nullable().describe('when the policy was deleted, after the revocation was proven'),
});

/** Evidence that the pull controller took over. */
export const ReadinessSchema = z.strictObject({
  controllerReadyAt: Timestamp,
  reconciledRevision: GitCommit.describe('revision the controller reports as applied'),
  ownedObjectCount: z.number().int().nonnegative(),
  ownedObjects: z
    .array(z.string().min(1).max(512))
    .max(64)
    .describe('sample of objects now owned by the controller, as Kind/namespace/name or Kind/name'),
});

/** Evidence that the bootstrap credential is dead. */
export const RevocationSchema = z.strictObject({
  method: z.enum(['bound-object-deleted', 'token-deleted', 'expired']),
  deletedObject: z
    .strictObject({
      kind: Name,
      namespace: Name.optional(),
      name: Name,
      uid: z.string().min(1).max(64),
      resourceVersion: z.string().max(64),
    })
    .optional(),
  tokenReview: z.strictObject({
    authenticated: z.boolean().describe('false proves the API server no longer accepts the credential'),
    checkedAt: Timestamp,
    auditId: z.string().max(64).optional(),
  }),
  directRequest: z.strictObject({
    statusCode: z.number().int().min(100).max(599).describe('status of a request made with the revoked credential'),
    checkedAt: Timestamp,
    auditId: z.string().max(64).optional(),
  }),
});

/** One pushed object the post-close check found different from the plan: its fields, never a value. */
export const TamperedObjectSchema = z.strictObject({
  object: z.string().min(1).max(400).describe('Kind/namespace/name'),
  fields: z.array(z.string().min(1).max(300)).max(16).describe('the differing fields (data[password], spec.replicas)'),
});

/**
 * What the post-close check found and what the run did about it: the planned values pushed again by a second,
 * confined, short-lived identity and verified, and the pushed workloads restarted on them (`repaired`); or, when that
 * could not be verified, the workloads and the tampered Secrets deleted (`stopped`).
 */
export const TamperingSchema = z.strictObject({
  detectedBy: StepNameSchema.describe('the step that found it: post-close-check'),
  detectedAt: Timestamp,
  objects: z.array(TamperedObjectSchema).min(1).max(64),
  repair: z
    .strictObject({
      outcome: z.enum(['repaired', 'stopped']),
      runId: z.string().max(128).describe('the repair identity is named for it (baton-bootstrap-<runId>)'),
      credential: z
        .strictObject({
          subject: Name,
          fingerprint: Sha256Digest,
          issuedAt: Timestamp,
          revokedAt: Timestamp.nullable(),
          writeWindowSeconds: z.number().nonnegative().optional(),
          tokenReviewAuthenticated: z.boolean().optional(),
        })
        .optional()
        .describe('the repair identity, absent when none was minted'),
      policyName: Name.optional().describe('the repair confinement'),
      repushed: z.array(z.string().max(400)).max(64).describe('objects pushed again with their planned values'),
      verifiedAt: Timestamp.optional().describe('when the post-close check found the repushed objects as planned'),
      restarted: z.array(z.string().max(400)).max(64).describe('workloads whose pods were replaced after the repair'),
      stopped: z.array(z.string().max(400)).max(64).describe('objects deleted because the repair was not verified'),
      repairSeconds: z.number().nonnegative().describe('from detection to a verified repair with restarted workloads'),
      error: z.string().max(2000).optional().describe('why the repair was not verified'),
    })
    .optional()
    .describe('absent when the repair did not run (the record error says why)'),
});

/** Seconds a credential was usable: from issue to the earlier of revocation and expiry. */
export function credentialLiveSeconds(c: { issuedAt: string; expiresAt: string; revokedAt: string | null }): number {
  const end = Math.min(
    c.revokedAt === null ? Number.POSITIVE_INFINITY : Date.parse(c.revokedAt),
    Date.parse(c.expiresAt),
  );
  return Math.max(0, (end - Date.parse(c.issuedAt)) / 1000);
}

/**
 * The handoff record: the in-toto predicate of every audit event. One record per handoff run, written when the
 * run ends, whatever the outcome.
 */
export const HandoffRecordSchema = z
  .strictObject({
    runId: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1-128 letters, digits, . _ : -')
      .describe('unique id of the handoff run; the CloudEvent id'),
    cluster: ClusterSchema,
    actor: ActorSchema,
    outcome: z.enum([HandoffOutcome.handedOff, HandoffOutcome.failed, HandoffOutcome.aborted, HandoffOutcome.tampered]),
    failedStep: StepNameSchema.optional().describe('the step that failed or was aborted'),
    error: z.string().max(2000).optional().describe('secret-free reason for a failed or aborted run'),
    startedAt: Timestamp,
    finishedAt: Timestamp.describe('the CloudEvent time'),
    plan: PlanSchema,
    credential: CredentialSchema.optional().describe('absent when the run ended before a credential was minted'),
    confinement: ConfinementSchema.optional().describe(
      'absent when the run ended before the confinement was installed',
    ),
    readiness: ReadinessSchema.optional().describe('absent when the controller never became ready'),
    revocation: RevocationSchema.optional().describe('absent when the run ended before revocation'),
    tampering: TamperingSchema.optional().describe('present exactly when the outcome is tampered'),
    stepDurationsMs: z
      .record(StepNameSchema, z.number().int().nonnegative())
      .describe('milliseconds each step took, in the order they ran'),
    signer: z
      .strictObject({
        kind: z.enum(['key-file', 'command', 'pkcs11']).describe('where the private key lives'),
        verifierKey: z.string().max(512).describe('the public verifier key (name+hash+base64) that signs this event'),
      })
      .optional()
      .describe('what signs this event, set by the audit writer: the kind of key and its public half, never the key'),
  })
  .superRefine((r, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if (Date.parse(r.finishedAt) < Date.parse(r.startedAt)) issue(['finishedAt'], 'must not be before startedAt');
    checkOutcome(r, issue);
    if (r.credential) checkCredentialTimes(r.credential, issue);
  })
  .describe('baton handoff record: the in-toto predicate of dev.baton.handoff.v1 events');

/** The handoff record (in-toto predicate). */
export type HandoffRecord = z.infer<typeof HandoffRecordSchema>;

type IssueAt = (path: PropertyKey[], message: string) => void;

/** A handed-off run has a credential, readiness and a proven revocation; any other outcome names its failed step. */
function checkOutcome(
  r: Pick<HandoffRecord, 'outcome' | 'failedStep' | 'credential' | 'readiness' | 'revocation' | 'tampering'>,
  issue: IssueAt,
): void {
  if ((r.outcome === HandoffOutcome.tampered) !== (r.tampering !== undefined)) {
    issue(['tampering'], r.tampering ? 'must be absent unless the outcome is tampered' : 'is required when tampered');
  }
  if (r.outcome !== HandoffOutcome.handedOff) {
    if (r.failedStep === undefined) issue(['failedStep'], `is required when the outcome is ${r.outcome}`);
    return;
  }
  if (r.failedStep !== undefined) issue(['failedStep'], 'must be absent when the outcome is handed-off');
  if (!r.credential) issue(['credential'], 'is required when the outcome is handed-off');
  if (!r.readiness) issue(['readiness'], 'is required when the outcome is handed-off');
  if (!r.revocation) {
    issue(['revocation'], 'is required when the outcome is handed-off');
    return;
  }
  if (r.revocation.tokenReview.authenticated) {
    issue(['revocation', 'tokenReview', 'authenticated'], 'must be false: a handoff ends with a dead credential');
  }
  if (r.revocation.directRequest.statusCode !== 401) {
    issue(['revocation', 'directRequest', 'statusCode'], 'must be 401: the revoked credential must be refused');
  }
}

/** The credential's times agree with each other and with its liveSeconds. */
function checkCredentialTimes(c: NonNullable<HandoffRecord['credential']>, issue: IssueAt): void {
  if (Date.parse(c.expiresAt) < Date.parse(c.issuedAt)) issue(['credential', 'expiresAt'], 'is before issuedAt');
  if (c.revokedAt !== null && Date.parse(c.revokedAt) < Date.parse(c.issuedAt)) {
    issue(['credential', 'revokedAt'], 'is before issuedAt');
  }
  // One second of slack: the engine may round; anything more is a record that contradicts itself.
  if (Math.abs(c.liveSeconds - credentialLiveSeconds(c)) > 1) {
    issue(['credential', 'liveSeconds'], `must be ${credentialLiveSeconds(c)} (issuedAt to min(revokedAt, expiresAt))`);
  }
}
