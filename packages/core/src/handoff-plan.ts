import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { SignerSpec } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { fromZodError } from 'zod-validation-error';
import type { KeylessPolicy } from './images/keyless-policy.js';
import { type HandoffPlanInput, HandoffPlanSchema } from './plan-schema.js';
import { fillSource, findProfile, type LoadedProfile, loadProfile } from './profile.js';

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
