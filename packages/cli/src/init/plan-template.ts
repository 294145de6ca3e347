import type { Profile } from '@baton/core/profile';

/** What {@link planTemplate} writes into a plan. */
export interface PlanTemplateOptions {
  readonly profile: Profile;
  readonly clusterName: string;
  readonly url: string;
  readonly ref: string;
  readonly path: string;
  /** The push set, relative to the plan. */
  readonly manifests: string;
  /** The audit signing key, relative to the plan. */
  readonly signingKeyPath: string;
  /** The pull credential file, relative to the plan (written by the user: it is a secret). */
  readonly pullCredentialPath: string;
  /** The Secrets the install's workloads read: files relative to the plan, `generated` when init wrote them. */
  readonly pushSecrets?: readonly { name: string; fromFile: string; generated: boolean }[];
}

/**
 * A commented handoff plan (YAML) that hands off as it stands once the pull credential file exists. The controller
 * block is left to the profile; the comments say how to override it.
 */
export function planTemplate(o: PlanTemplateOptions): string {
  const c = o.profile.controller;
  const q = JSON.stringify;
  return `# A baton handoff plan, written by \`baton init --profile ${o.profile.name}\`.
# Check it with \`baton plan --plan <this file> [--kubeconfig K]\` (writes nothing), then hand off with
# \`baton up --plan <this file> --kubeconfig K\`. Schema: packages/core/schemas/handoff-plan.schema.json.
apiVersion: baton.dev/v1alpha1
kind: HandoffPlan
cluster:
  # The cluster's name in the audit log and receipt. The operator's kubeconfig: --kubeconfig, else
  # cluster.kubeconfig (a path relative to this file), else $KUBECONFIG, else ~/.kube/config.
  name: ${q(o.clusterName)}
push:
  # The only push credential baton allows: a minted ServiceAccount token scoped to exactly the objects below,
  # confined by the API server, revoked and proven dead once the controller has taken over.
  credential: bootstrap-token
  profile: ${q(o.profile.name)}
  # The install set ${o.profile.description ? `(${o.profile.description}) ` : ''}rendered for the source below, with
  # its takeover rules in rules/profile.yaml. Commit git/ (the same files without what the profile keeps push-only)
  # under pull.source.path, so that the controller owns them afterwards.
  manifests: ${q(o.manifests)}
  # The longest the push credential may live, in seconds (at most 600).
  budgetSeconds: 300
  # Every image the push runs is verified before anything is minted: pinned by digest and signed (cosign) by a key or
  # a keyless identity of the profile's imageTrust, or of the trust named here (docs/images.md). Without either it is
  # pushed unverified, with a warning, and the audit event says so.
  # images:
  #   trustedKeys: ./keys/image-keys.yaml
  #   keyless:                                  # signed by a CI workflow (Fulcio certificate, Rekor entry)
  #     trustedRoot: ./keys/trusted_root.json   # a Sigstore trusted root, read offline
  #     identities:
  #       - issuer: https://token.actions.githubusercontent.com
  #         subjectRegExp: https://github\\.com/<org>/<repo>/\\.github/workflows/release\\.yml@refs/tags/v.+
  #   credentials: ./docker/config.json         # registry logins (a Docker config); @default $DOCKER_CONFIG, ~/.docker
  #   mirrors: { ghcr.io: https://mirror.internal.example }   # where signatures are read instead of https://<host>
${pushSecretsBlock(o.pushSecrets ?? [])}pull:
  credential:
    # The read-only Git credential the controller pulls with: a YAML map, e.g.
    #   username: <deploy-token-user>
    #   password: <deploy-token>
    # Create it (mode 0600) before \`baton up\`; it becomes Secret ${o.profile.namespace}/${c?.pullSecret ?? '?'} and is never logged.
    fromFile: ${q(o.pullCredentialPath)}
  source:
    url: ${q(o.url)}
    ref: ${q(o.ref)}
    path: ${q(o.path)}
    # revision: <40-hex commit>   # @default resolved from ref with git ls-remote at run time
# The controller block comes from the profile (${o.profile.name}: Deployment ${c?.name ?? '?'}, ServiceAccount
# ${c?.serviceAccount ?? '?'} in ${o.profile.namespace}, status from ${o.profile.revision.object.kind}/${o.profile.revision.object.name}, field manager
# ${o.profile.fieldManagers[0] ?? 'baton-controller'}). Any field may be overridden here, e.g.:
# controller:
#   privilege: cluster-admin   # the controller may apply anything from Git; recorded in the audit event
takeover:
  # How long the controller has to become ready, apply the declared revision and own what was pushed.
  timeoutSeconds: 300
audit:
  # The signed, tamper-evident audit log; check it with \`baton audit verify <log> --keys <trusted-keys.yaml>\`.
  logPath: ./audit/handoffs.jsonl
  signingKeyPath: ${q(o.signingKeyPath)}
# The local step journal that lets a killed run resume.
journalDir: ./.baton/journal
`;
}

/** `push.secrets` for the Secrets the install reads (empty when it reads none). */
function pushSecretsBlock(secrets: NonNullable<PlanTemplateOptions['pushSecrets']>): string {
  if (secrets.length === 0) return '';
  const q = JSON.stringify;
  const lines = [
    "  # Secrets the install's workloads read (push-only, never in Git): YAML maps of key: value, mode 0600.",
    ...secrets.map(
      (x) =>
        `  #   ${x.name}: ${x.generated ? 'random values written by baton init' : 'write this file before baton up'}`,
    ),
    '  secrets:',
    ...secrets.map((x) => `    - { name: ${q(x.name)}, fromFile: ${q(x.fromFile)} }`),
  ];
  return `${lines.join('\n')}\n`;
}
