import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HandoffPlanInput, HandoffPlanSchema, type LoadedPlan, parseHandoffPlan } from '@baton/core/plan';

/** The Git source the controller pulls from (`pull.source` of a plan). */
export interface GitSource {
  readonly url: string;
  /** @default 'main' */
  readonly ref?: string;
  /** @default '.' */
  readonly path?: string;
  /** The commit the controller must reconcile. @default resolved from `ref` with `git ls-remote` */
  readonly revision?: string;
}

/** Where the controller reports the revision it applied (`controller.status` of a plan). */
export interface ControllerStatus {
  /** @default 'v1' */
  readonly apiVersion?: string;
  /** @default 'ConfigMap' */
  readonly kind?: string;
  /** @default the controller namespace */
  readonly namespace?: string;
  /** @default the profile's revision object */
  readonly name?: string;
  /** Dotted path of the applied revision. @default the profile's revision path, else 'data.revision' */
  readonly revisionPath?: string;
}

/**
 * The controller that takes over and what the push installs for it: a plan's `push.profile`, `push.manifests`,
 * `pull.credential.secretName`, `pull.source` and `controller`, in one value (see `controllers`).
 */
export interface ControllerSpec {
  /** Controller profile name (bootstrap-manifests/<profile>). */
  readonly profile: string;
  /** Directory of the manifests to push: the same files Git carries (relative paths resolve against the program's directory). */
  readonly manifests: string;
  readonly source: GitSource;
  /**
   * The controller profile's rules (a profile folder or its `rules/profile.yaml`) when `manifests` carries none.
   * @default `manifests`/rules/profile.yaml
   */
  readonly profileRules?: string;
  /** The Secret the push creates from `pullCredential`, which the controller pulls with. @default the profile's */
  readonly pullSecretName?: string;
  /** The controller Deployment. @default the profile's */
  readonly name?: string;
  /** @default the profile's */
  readonly namespace?: string;
  /** @default the profile's */
  readonly serviceAccount?: string;
  /** Field manager the controller applies with. @default the profile's first, else 'baton-controller' */
  readonly fieldManager?: string;
  /** @default the profile's revision object */
  readonly status?: ControllerStatus;
  /** What the controller may apply from Git (recorded in the audit event). @default 'scoped' */
  readonly privilege?: 'scoped' | 'cluster-admin';
}

/** The audit log of the handoff (`audit` of a plan). Relative paths resolve against the program's directory. */
export interface AuditSpec {
  readonly logPath: string;
  /** The Ed25519 key file; or give `signer`. */
  readonly signingKeyPath?: string;
  /**
   * A key that is not in a file: a signer `command` (a KMS or HSM behind it; reads the message on stdin, prints the
   * base64 Ed25519 signature) or a `pkcs11` URI (a key in a token). `publicKey`, the verifier key every signature is
   * checked against, is required with a command.
   */
  readonly signer?: {
    readonly command?: readonly string[];
    readonly pkcs11?: string;
    readonly publicKey?: string;
    readonly timeoutSeconds?: number;
  };
  /** @default 'baton.dev/handoff' */
  readonly origin?: string;
}

/** Keyless signers: a Sigstore trusted root file and the OIDC identities it may vouch for. */
export interface KeylessSpec {
  readonly trustedRoot: string;
  readonly identities: readonly {
    readonly issuer: string;
    readonly subject?: string;
    readonly subjectRegExp?: string;
  }[];
}

/** How the push set's images are verified before anything is minted (a plan's `push.images`; docs/images.md). */
export interface ImageTrustSpec {
  /** Trusted-keys file whose keys the images must be signed by, instead of the profile's imageTrust. */
  readonly trustedKeys?: string;
  /** Keyless signers (either kind verifies). */
  readonly keyless?: KeylessSpec;
  /**
   * Per-repository rules, checked in order before trustedKeys and keyless: their own signers, or `unsigned` with the
   * reason their images are pushed without a signature (recorded in the audit event).
   */
  readonly rules?: readonly {
    readonly images: readonly string[];
    readonly trustedKeys?: string;
    readonly keyless?: KeylessSpec;
    readonly unsigned?: string;
  }[];
  /** Require with each signed image an SLSA provenance attestation naming one of these builders (and sources). */
  readonly provenance?: { readonly builders: readonly string[]; readonly sources?: readonly string[] };
  /** A Docker config.json whose logins signatures are read with. @default $DOCKER_CONFIG's, else ~/.docker's */
  readonly credentials?: string;
  /** Where signatures are read instead of `https://<host>`, by registry host. */
  readonly mirrors?: Readonly<Record<string, string>>;
}

/**
 * The resolved inputs of a handoff, as the provider receives them: the plan's fields under the component's names.
 * `kubeconfig`, `pullCredential` and `pushSecrets` are secrets.
 */
export interface HandoffInputs {
  /** Cluster name in audit records. */
  readonly clusterName: string;
  /** The operator's kubeconfig text (YAML or JSON). Secret. */
  readonly kubeconfig: string;
  readonly context?: string;
  /** @default 'baton-system' */
  readonly batonNamespace?: string;
  readonly controller: ControllerSpec;
  /** The read-only Git credential the controller pulls with (e.g. `{ username, password }`). Secret. */
  readonly pullCredential: Readonly<Record<string, string>>;
  /** Push-only Secrets in the controller namespace that never live in Git, by name (e.g. a webhook key). Secret. */
  readonly pushSecrets?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly push?: { readonly budgetSeconds?: number; readonly fieldManager?: string; readonly images?: ImageTrustSpec };
  readonly takeover?: { readonly timeoutSeconds?: number; readonly requireOwnership?: boolean };
  readonly audit: AuditSpec;
  /** Local step journal. @default '.baton/journal' */
  readonly journalDir?: string;
}

/**
 * Inputs whose change after the handoff changes how baton reaches the cluster, not what was pushed: the operator's
 * access, and the provider module the host loads (`__provider`, which earlier versions of @baton/pulumi serialized).
 */
export const ACCESS_INPUTS: readonly string[] = ['kubeconfig', 'context', '__provider'];

/** One refused input, named by its property path on the component (Pulumi's `CheckFailure`). */
export interface InputFailure {
  readonly property: string;
  readonly reason: string;
}

// Plan paths that are named differently on the component; the rest keep the plan's path.
const PLAN_TO_INPUT: ReadonlyArray<readonly [string, string]> = [
  ['cluster.kubeconfigContent', 'kubeconfig'],
  ['cluster.context', 'context'],
  ['cluster.name', 'clusterName'],
  ['push.profile', 'controller.profile'],
  ['push.manifests', 'controller.manifests'],
  ['push.secrets', 'pushSecrets'],
  ['pull.credential.secretName', 'controller.pullSecretName'],
  ['takeover.profile', 'controller.profileRules'],
  ['pull.credential', 'pullCredential'],
  ['pull.source', 'controller.source'],
];

/** The component's property path for a path of the plan schema (`pull.source.url` → `controller.source.url`). */
export function inputPath(planPath: readonly PropertyKey[]): string {
  const p = planPath.map(String).join('.');
  for (const [from, to] of PLAN_TO_INPUT) {
    if (p === from || p.startsWith(`${from}.`)) return to + p.slice(from.length);
  }
  return p;
}

/**
 * The handoff plan of these inputs, as a plan file would state it; secret values stay out of it: the pull credential
 * and push secrets are named by `files` (written by {@link withLoadedPlan}).
 */
export function toPlanInput(inputs: HandoffInputs, files: SecretFiles): HandoffPlanInput {
  const c = inputs.controller;
  const { profile, manifests, source, pullSecretName, profileRules, ...block } = c ?? ({} as Partial<ControllerSpec>);
  const takeover = { ...inputs.takeover, ...(profileRules !== undefined ? { profile: profileRules } : {}) };
  return {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    cluster: {
      name: inputs.clusterName,
      kubeconfigContent: inputs.kubeconfig,
      ...(inputs.context !== undefined ? { context: inputs.context } : {}),
    },
    ...(inputs.batonNamespace !== undefined ? { batonNamespace: inputs.batonNamespace } : {}),
    push: {
      credential: 'bootstrap-token',
      profile,
      manifests,
      ...inputs.push,
      secrets: Object.keys(inputs.pushSecrets ?? {}).map((name) => ({ name, fromFile: files.pushSecrets[name] ?? '' })),
    },
    pull: {
      credential: {
        ...(pullSecretName !== undefined ? { secretName: pullSecretName } : {}),
        fromFile: files.pullCredential,
      },
      source,
    },
    // Only the fields given: the rest of the controller block is the profile's (core fills it in).
    controller: Object.fromEntries(Object.entries(block).filter(([, v]) => v !== undefined)),
    ...(Object.keys(takeover).length > 0 ? { takeover } : {}),
    audit: inputs.audit,
    ...(inputs.journalDir !== undefined ? { journalDir: inputs.journalDir } : {}),
  } as HandoffPlanInput;
}

/** Paths of the files that carry the secret maps of a plan. */
export interface SecretFiles {
  readonly pullCredential: string;
  readonly pushSecrets: Readonly<Record<string, string>>;
}

/**
 * Validates the inputs with the handoff plan's own zod schema (the plan file and the component cannot drift) and
 * names each problem by the component's property path. Unknown values (during a preview) are not checked.
 */
export function validateInputs(inputs: HandoffInputs): InputFailure[] {
  const failures: InputFailure[] = [];
  for (const [property, map] of [
    ['pullCredential', inputs.pullCredential],
    ...Object.entries(inputs.pushSecrets ?? {}).map(([k, v]) => [`pushSecrets.${k}`, v] as const),
  ] as const) {
    if (map === null || typeof map !== 'object' || Object.values(map).some((v) => typeof v !== 'string')) {
      failures.push({ property, reason: 'must be a map of key: string value (e.g. { username, password })' });
    }
  }
  const placeholder: SecretFiles = {
    pullCredential: '<pullCredential>',
    pushSecrets: Object.fromEntries(Object.keys(inputs.pushSecrets ?? {}).map((k) => [k, `<pushSecrets.${k}>`])),
  };
  const r = HandoffPlanSchema.safeParse(toPlanInput(inputs, placeholder));
  if (!r.success) {
    for (const issue of r.error.issues) failures.push({ property: inputPath(issue.path), reason: issue.message });
  }
  return failures;
}

/**
 * Runs `fn` with the plan of these inputs, its secret maps written to files in a private temporary directory
 * (0700, files 0600) that is removed afterwards. `keysOnly` writes empty values: enough for a preview, whose digest
 * covers Secret keys and never values.
 * @throws {ConfigError} when the plan is refused (as {@link parseHandoffPlan}).
 */
export async function withLoadedPlan<T>(
  inputs: HandoffInputs,
  keysOnly: boolean,
  fn: (loaded: LoadedPlan) => Promise<T> | T,
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-pulumi-'));
  chmodSync(dir, 0o700);
  try {
    const write = (name: string, map: Readonly<Record<string, string>>) => {
      const path = join(dir, `${name}.json`);
      const values = keysOnly ? Object.fromEntries(Object.keys(map).map((k) => [k, ''])) : map;
      // JSON is YAML: core reads these files as YAML maps.
      writeFileSync(path, JSON.stringify(values), { mode: 0o600 });
      return path;
    };
    const files: SecretFiles = {
      pullCredential: write('pull-credential', inputs.pullCredential),
      pushSecrets: Object.fromEntries(
        Object.entries(inputs.pushSecrets ?? {}).map(([name, map], i) => [name, write(`push-secret-${i}`, map)]),
      ),
    };
    return await fn(parseHandoffPlan(toPlanInput(inputs, files), `Handoff ${inputs.clusterName}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first property path at which two input values differ, or undefined when they are equal. */
export function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (a === b) return undefined;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return path || '<root>';
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  for (const k of keys) {
    const d = firstDifference(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      path ? `${path}.${k}` : k,
    );
    if (d !== undefined) return d;
  }
  return undefined;
}

/** Top-level inputs that hold secrets: a failure on them never names them as a property (see {@link checkHandoff}). */
const SECRET_INPUTS: readonly string[] = ['kubeconfig', 'pullCredential', 'pushSecrets'];

/**
 * Checks the inputs of a handoff: the plan schema's rules by property path and, once the cluster is handed off
 * (`olds` is the last handoff's inputs), refuses a change to what was pushed. `pulumi up --replace` checks without
 * `olds`, so a replacement is a new handoff.
 */
export function checkHandoff(olds: Partial<HandoffInputs>, news: HandoffInputs): InputFailure[] {
  const failures = validateInputs(news);
  if (failures.length === 0 && Object.keys(olds ?? {}).length > 0) {
    const changed = firstDifference(withoutAccess(olds), withoutAccess(news));
    if (changed !== undefined) {
      failures.push({
        property: changed,
        reason: `the cluster is handed off; change it in Git (the controller pulls ${news.controller.source.url}), or ask for a new handoff with \`pulumi up --replace <urn>\``,
      });
    }
  }
  // The engine prints the input value of a failure's top-level property: a secret one goes into the reason instead.
  return failures.map((f) =>
    SECRET_INPUTS.includes(f.property) ? { property: '', reason: `${f.property}: ${f.reason}` } : f,
  );
}

/** The inputs without the operator's access ({@link ACCESS_INPUTS}): what a handoff pushed and recorded. */
export function withoutAccess(inputs: Partial<HandoffInputs>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(inputs).filter(([k]) => !ACCESS_INPUTS.includes(k)));
}
