import { isAbsolute, resolve } from 'node:path';
import { type HandoffPreview, previewHandoff } from '@baton/core/plan';
import * as pulumi from '@pulumi/pulumi';
import type { AuditSpec, ControllerSpec, HandoffInputs, ImageTrustSpec, KeylessSpec } from './handoff-inputs.js';
import { withLoadedPlan } from './handoff-inputs.js';
import type { AuditReceipt, CredentialReceipt, HandoffReceipt } from './handoff-receipt.js';

/** Arguments of {@link Handoff}: a handoff plan's fields, as Pulumi inputs. */
export interface HandoffArgs {
  /** The operator's kubeconfig text (YAML or JSON), e.g. a cluster resource's kubeconfig output. Always a secret. */
  readonly kubeconfig: pulumi.Input<string>;
  /** Kubeconfig context. @default the kubeconfig's current context */
  readonly context?: pulumi.Input<string>;
  /** Cluster name in audit records. @default the resource name */
  readonly clusterName?: pulumi.Input<string>;
  /** Namespace of the lock, receipt and bootstrap identity. @default 'baton-system' */
  readonly batonNamespace?: pulumi.Input<string>;
  /** The controller that takes over and what the push installs for it (see `controllers`). */
  readonly controller: pulumi.Input<ControllerSpec>;
  /** The read-only Git credential the controller pulls with, e.g. `{ username, password }`. Always a secret. */
  readonly pullCredential: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** Push-only Secrets (never in Git) by name, e.g. `{ 'baton-webhook': { secret } }`. Always secrets. @default {} */
  readonly pushSecrets?: pulumi.Input<Record<string, pulumi.Input<Record<string, pulumi.Input<string>>>>>;
  /**
   * The push window, field manager and how the images are verified (`images`: trusted keys, keyless identities, the
   * Docker config with registry logins, mirrors; docs/images.md; files relative to the program's directory).
   * @default budgetSeconds 300, fieldManager 'baton-bootstrap', the profile's imageTrust
   */
  readonly push?: pulumi.Input<{
    readonly budgetSeconds?: number;
    readonly fieldManager?: string;
    readonly images?: ImageTrustSpec;
  }>;
  /** How long to wait for the takeover. @default timeoutSeconds 300, requireOwnership true */
  readonly takeover?: pulumi.Input<{ readonly timeoutSeconds?: number; readonly requireOwnership?: boolean }>;
  /** The signed audit log (paths relative to the program's directory). */
  readonly audit: pulumi.Input<AuditSpec>;
  /** Local step journal, relative to the program's directory. @default '.baton/journal' */
  readonly journalDir?: pulumi.Input<string>;
}

/**
 * The `__provider` module Pulumi's dynamic-provider host loads (`require-from-string`, then `.handler()`): it loads
 * the provider by package name, resolved from the program's directory. Written here rather than produced by
 * `pulumi.dynamic.Resource`'s closure serialization, which loads TypeScript and walks the closure with the inspector
 * in every program run (about 1 s of each preview and each update), and would put module code into the state.
 */
export const PROVIDER_MODULE = "exports.handler = () => require('@baton/pulumi/provider').handoffProvider;\n";

/**
 * The dynamic resource that runs the handoff; its state is the inputs and the receipt. Its type is the one
 * `pulumi.dynamic.Resource` gives (`pulumi-nodejs:dynamic/baton:HandoffRun`), so existing stacks keep their URNs.
 */
class HandoffRun extends pulumi.CustomResource {
  declare readonly receipt: pulumi.Output<HandoffReceipt>;
  constructor(name: string, props: Record<string, pulumi.Input<unknown>>, opts: pulumi.CustomResourceOptions) {
    super(
      'pulumi-nodejs:dynamic/baton:HandoffRun',
      name,
      { ...props, __provider: PROVIDER_MODULE, receipt: undefined },
      opts,
    );
  }
}

/**
 * Hands a new cluster from push to pull inside `pulumi up`: a short-lived, confined bootstrap credential pushes the
 * controller, which takes over from Git; the credential is revoked, its death proven, and a signed audit event
 * recorded, all by `@baton/core`. `pulumi preview` shows the push plan without touching the cluster. After the
 * handoff, a change to what was pushed is refused (change it in Git), unless `pulumi up --replace` asks for a new
 * handoff; `pulumi destroy` leaves the controller running.
 */
export class Handoff extends pulumi.ComponentResource {
  /** Everything the handoff left (secret-free). */
  declare readonly receipt: pulumi.Output<HandoffReceipt>;
  /**
   * `handed-off`, or `already-handed-off` when the cluster already pulled the declared revision. Never `tampered`: a
   * run whose post-close check found a rewrite fails the update (error code `tampered`) even after a verified repair,
   * so the state never claims a clean handoff; a later `pulumi up` hands off (pushing only what the controller does
   * not own) and fills these outputs.
   */
  declare readonly outcome: pulumi.Output<string>;
  declare readonly runId: pulumi.Output<string>;
  /** The Git commit the controller took over at. */
  declare readonly revision: pulumi.Output<string | null>;
  declare readonly credential: pulumi.Output<CredentialReceipt | null>;
  declare readonly proof: pulumi.Output<HandoffReceipt['proof']>;
  declare readonly confinement: pulumi.Output<HandoffReceipt['confinement']>;
  declare readonly audit: pulumi.Output<AuditReceipt | null>;
  /** The receipt ConfigMap in the cluster, as namespace/name. */
  declare readonly receiptName: pulumi.Output<string>;
  /** The push plan: objects, plan digest, the credential's RBAC rules and its confinement (computed, no cluster). */
  declare readonly plan: pulumi.Output<HandoffPreview>;

  /**
   * @throws {ConfigError} (in preview) when the inputs or the manifest set are refused, naming the property path.
   */
  constructor(name: string, args: HandoffArgs, opts: pulumi.ComponentResourceOptions = {}) {
    super('baton:index:Handoff', name, {}, opts);
    const base = process.cwd();
    const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
    const controller = pulumi.output(args.controller).apply((c) => ({ ...c, manifests: abs(c.manifests) }));
    const audit = pulumi.output(args.audit).apply((a) => ({
      ...a,
      logPath: abs(a.logPath),
      ...(a.signingKeyPath ? { signingKeyPath: abs(a.signingKeyPath) } : {}),
    }));
    const journalDir = pulumi.output(args.journalDir ?? '.baton/journal').apply(abs);
    const push =
      args.push === undefined
        ? undefined
        : pulumi
            .output(args.push)
            .apply((p) => (p.images ? { ...p, images: imagesWithAbsolutePaths(p.images, abs) } : p));
    const clusterName = pulumi.output(args.clusterName ?? name);
    const run = new HandoffRun(
      name,
      {
        clusterName,
        kubeconfig: pulumi.secret(args.kubeconfig),
        context: args.context,
        batonNamespace: args.batonNamespace,
        controller,
        pullCredential: pulumi.secret(args.pullCredential),
        pushSecrets: pulumi.secret(args.pushSecrets ?? {}),
        push,
        takeover: args.takeover,
        audit,
        journalDir,
      },
      { parent: this, additionalSecretOutputs: ['kubeconfig', 'pullCredential', 'pushSecrets'] },
    );
    this.plan = planOf(this, {
      clusterName,
      batonNamespace: args.batonNamespace,
      controller,
      push,
      audit,
      // Keys only: the plan digest covers Secret keys, never values, so the preview needs no secret.
      pullKeys: pulumi.unsecret(pulumi.output(args.pullCredential).apply((m) => Object.keys(m))),
      pushKeys: pulumi.unsecret(
        pulumi
          .output(args.pushSecrets ?? {})
          .apply((m) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Object.keys(v)]))),
      ),
    });
    this.receipt = run.receipt;
    this.outcome = run.receipt.outcome;
    this.runId = run.receipt.runId;
    this.revision = run.receipt.revision;
    this.credential = run.receipt.credential;
    this.proof = run.receipt.proof;
    this.confinement = run.receipt.confinement;
    this.audit = run.receipt.audit;
    this.receiptName = run.receipt.receiptName;
    this.registerOutputs({ receipt: this.receipt, plan: this.plan });
  }
}

/** What {@link planOf} needs: the inputs without the secrets, and the secret maps' keys. */
interface PlanSources {
  readonly clusterName: pulumi.Input<string>;
  readonly batonNamespace: pulumi.Input<string> | undefined;
  readonly controller: pulumi.Input<ControllerSpec>;
  readonly push: HandoffArgs['push'];
  readonly audit: pulumi.Input<AuditSpec>;
  readonly pullKeys: pulumi.Input<string[]>;
  readonly pushKeys: pulumi.Input<Record<string, string[]>>;
}

/** The push plan, computed in the program from the plan and manifests alone; shown during `pulumi preview`. */
function planOf(parent: pulumi.Resource, s: PlanSources): pulumi.Output<HandoffPreview> {
  return pulumi
    .all([s.clusterName, s.batonNamespace, s.controller, s.push, s.audit, s.pullKeys, s.pushKeys])
    .apply(async ([clusterName, batonNamespace, controller, push, audit, pullKeys, pushKeys]) => {
      const keys = (list: readonly string[]) => Object.fromEntries(list.map((k) => [k, '']));
      const inputs: HandoffInputs = {
        clusterName,
        kubeconfig: '<not needed for a preview>',
        ...(batonNamespace !== undefined ? { batonNamespace } : {}),
        controller,
        pullCredential: keys(pullKeys),
        pushSecrets: Object.fromEntries(Object.entries(pushKeys).map(([k, v]) => [k, keys(v)])),
        ...(push !== undefined ? { push } : {}),
        audit,
      };
      const preview = await withLoadedPlan(inputs, true, previewHandoff);
      if (pulumi.runtime.isDryRun()) await pulumi.log.info(formatPreview(preview), parent);
      return preview;
    });
}

/** The push plan in a few lines for the engine's diagnostics. */
export function formatPreview(p: HandoffPreview): string {
  return [
    `baton push plan ${p.planDigest}: ${p.objects.length} objects (${p.pushOnly.length} push-only), nothing is written before \`pulumi up\``,
    ...p.objects.map((o) => `  push ${o}${p.pushOnly.includes(o) ? ' (push-only, never in Git)' : ''}`),
    `  credential ${p.confinement.subject}: ${p.rules.length} RBAC rules, no wildcard`,
    ...p.rules.map(
      (r) =>
        `    ${r.verbs.join(',')} ${r.apiGroups.map((g) => g || 'core').join(',')}/${r.resources.join(',')}${r.resourceNames?.length ? ` ${r.resourceNames.join(',')}` : ''}${r.namespace ? ` in ${r.namespace}` : ''}`,
    ),
    `  confinement ${p.confinement.policyName}: ${p.confinement.validationCount} validations (${p.confinement.policyBytes} bytes) allow only ${p.confinement.allowed.length} writes; ${p.confinement.content}`,
  ].join('\n');
}

/** `images` with its files (trusted keys, trusted roots, Docker config, its rules' too) resolved by `abs`. */
function imagesWithAbsolutePaths(images: ImageTrustSpec, abs: (p: string) => string): ImageTrustSpec {
  const keyless = (k: KeylessSpec) => ({ ...k, trustedRoot: abs(k.trustedRoot) });
  return {
    ...images,
    ...(images.trustedKeys ? { trustedKeys: abs(images.trustedKeys) } : {}),
    ...(images.credentials ? { credentials: abs(images.credentials) } : {}),
    ...(images.keyless ? { keyless: keyless(images.keyless) } : {}),
    ...(images.rules
      ? {
          rules: images.rules.map((r) => ({
            ...r,
            ...(r.trustedKeys ? { trustedKeys: abs(r.trustedKeys) } : {}),
            ...(r.keyless ? { keyless: keyless(r.keyless) } : {}),
          })),
        }
      : {}),
  };
}
