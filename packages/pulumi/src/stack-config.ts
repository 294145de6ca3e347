import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { controllerOf } from './controllers.js';
import { Handoff, type HandoffArgs } from './handoff.js';
import type { AuditSpec, ImageTrustSpec } from './handoff-inputs.js';

/**
 * The config keys a stack of baton's reads (`pulumi config set <key> <value>`; secrets with `--secret`):
 * - `profile` (@default baton-controller): the controller profile (`baton-controller`, `flux`, …) whose
 *   `rules/profile.yaml` the push set carries;
 * - `gitUrl`, `gitRef` (@default main), `gitPath` (@default .), `gitRevision` (a commit; @default resolved from the ref);
 * - `manifests`: the rendered push set directory (the same files Git carries), relative to the stack;
 * - `pullUsername` and `pullPassword` (secret): the read-only Git credential the controller pulls with;
 * - `pushSecrets` (secret object, optional): the plan's push-only Secrets, name to keys to values, e.g. Argo CD's
 *   `pulumi config set --secret --path 'pushSecrets["argocd-redis"].auth' VALUE`; the push refuses a set whose
 *   workloads read a Secret it does not create;
 * - `webhookSecret` (secret, optional): shorthand for `pushSecrets["baton-webhook"].secret` (baton-controller's);
 * - `clusterName` (@default the stack name), `takeoverTimeoutSeconds` (@default 300);
 * - `auditLog` (@default audit/handoffs.jsonl) and `signingKey` (@default audit/baton.key), relative to the stack;
 *   or, for a key in a KMS or HSM, `signerCommand` (a list: program and arguments) and `signerPublicKey` (its
 *   verifier key), or `signerPkcs11` (a PKCS#11 URI), instead of `signingKey` (docs/attestation.md);
 * - `journalDir` (@default .baton/journal): the local step journal; run logs go beside it (`logs/`).
 */
export const STACK_CONFIG_KEYS = [
  'profile',
  'gitUrl',
  'gitRef',
  'gitPath',
  'gitRevision',
  'manifests',
  'pullUsername',
  'pullPassword',
  'pushSecrets',
  'webhookSecret',
  'clusterName',
  'takeoverTimeoutSeconds',
  'auditLog',
  'signingKey',
  'signerCommand',
  'signerPkcs11',
  'signerPublicKey',
  'journalDir',
  'images',
] as const;

/** The stack outputs of {@link handoffFromConfig}: the receipt and the push plan. */
export interface HandoffStackOutputs {
  readonly receipt: Handoff['receipt'];
  readonly plan: Handoff['plan'];
}

/**
 * A {@link Handoff} to the controller of config `profile` (baton-controller by default) whose inputs come from the stack's config ({@link STACK_CONFIG_KEYS}) and
 * whose kubeconfig is given (from config, a StackReference or a cluster resource).
 * @throws {pulumi.RunError} when a required config key is missing (Pulumi names it).
 */
export function handoffFromConfig(kubeconfig: pulumi.Input<string>): HandoffStackOutputs {
  const config = new pulumi.Config();
  const revision = config.get('gitRevision');
  const pushSecrets = pushSecretsFromConfig(config);
  const journalDir = config.get('journalDir');
  // How the images are verified (the plan's push.images, as JSON: trustedKeys, keyless, credentials, mirrors).
  const images = config.getObject<ImageTrustSpec>('images');
  const handoff = new Handoff(config.get('clusterName') ?? pulumi.getStack(), {
    kubeconfig,
    controller: controllerOf(config.get('profile') ?? 'baton-controller', {
      source: {
        url: config.require('gitUrl'),
        ref: config.get('gitRef') ?? 'main',
        path: config.get('gitPath') ?? '.',
        ...(revision ? { revision } : {}),
      },
      manifests: config.require('manifests'),
    }),
    pullCredential: { username: config.require('pullUsername'), password: config.requireSecret('pullPassword') },
    ...(pushSecrets ? { pushSecrets } : {}),
    ...(images ? { push: { images } } : {}),
    takeover: { timeoutSeconds: config.getNumber('takeoverTimeoutSeconds') ?? 300 },
    audit: { logPath: config.get('auditLog') ?? 'audit/handoffs.jsonl', ...signerFromConfig(config) },
    ...(journalDir ? { journalDir } : {}),
  });
  return { receipt: handoff.receipt, plan: handoff.plan };
}

/**
 * The audit key: config `signingKey` (a file), or `signerCommand` with `signerPublicKey` (a KMS or HSM), not both.
 * @throws {pulumi.RunError} naming the keys when they are mixed or half given.
 */
function signerFromConfig(config: pulumi.Config): Pick<AuditSpec, 'signingKeyPath' | 'signer'> {
  const command = config.getObject<unknown>('signerCommand');
  const pkcs11 = config.get('signerPkcs11');
  const publicKey = config.get('signerPublicKey');
  if (command === undefined && pkcs11 === undefined && publicKey === undefined) {
    return { signingKeyPath: config.get('signingKey') ?? 'audit/baton.key' };
  }
  if (config.get('signingKey') !== undefined || (command !== undefined && pkcs11 !== undefined)) {
    throw new pulumi.RunError(
      'stack config signerCommand: give one of signingKey (a key file), signerCommand with signerPublicKey, or signerPkcs11',
    );
  }
  if (pkcs11 !== undefined) return { signer: { pkcs11, ...(publicKey ? { publicKey } : {}) } };
  if (!Array.isArray(command) || command.length === 0 || !command.every((a) => typeof a === 'string' && a !== '')) {
    throw new pulumi.RunError(
      "stack config signerCommand: must be a list of the program and its arguments, e.g. pulumi config set --path 'signerCommand[0]' ./bin/kms-sign",
    );
  }
  if (!publicKey) {
    throw new pulumi.RunError(
      'stack config signerPublicKey: required with signerCommand: the verifier key the command signs with (baton audit keygen --public-key prints it)',
    );
  }
  return { signer: { command: command as string[], publicKey } };
}

const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const PushSecretsSchema = z.record(
  z.string().max(253).regex(SECRET_NAME, 'a Secret name is a DNS subdomain (lower case, digits, "-" and ".")'),
  z
    .record(z.string().regex(SECRET_KEY, 'a Secret key is letters, digits, "-", "_" and "."'), z.string())
    .refine((keys) => Object.keys(keys).length > 0, 'a Secret needs at least one key'),
);

/**
 * Config `pushSecrets` (with `webhookSecret` as `baton-webhook`'s `secret`), checked before anything runs: a bad
 * shape is refused naming the config path and the rule, never a value.
 * @throws {pulumi.RunError} when the shape is wrong or `baton-webhook` is given both ways.
 */
function pushSecretsFromConfig(config: pulumi.Config): HandoffArgs['pushSecrets'] {
  // Read plainly once to check its shape here (Pulumi's own getters would only fail inside an apply).
  const raw = config.getObject<unknown>('pushSecrets');
  const webhook = config.getSecret('webhookSecret');
  if (raw === undefined) return webhook ? pulumi.secret({ 'baton-webhook': { secret: webhook } }) : undefined;
  const parsed = PushSecretsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = ['pushSecrets', ...issue.path.map((p) => `[${JSON.stringify(String(p))}]`)].join('');
    // A bad record key is reported with the key's own rule nested inside.
    const rule = (issue.code === 'invalid_key' ? issue.issues[0]?.message : undefined) ?? issue.message;
    throw new pulumi.RunError(
      `stack config ${at}: ${rule.replace(/^Invalid input: /, '')}; pushSecrets maps Secret names to maps of key: string value, e.g. pulumi config set --secret --path 'pushSecrets["argocd-redis"].auth' VALUE`,
    );
  }
  if (webhook && 'baton-webhook' in parsed.data)
    throw new pulumi.RunError(
      'stack config webhookSecret and pushSecrets["baton-webhook"] both set the baton-webhook Secret; keep one (pulumi config rm webhookSecret)',
    );
  const secrets = pulumi.secret(parsed.data);
  return webhook
    ? pulumi.all([secrets, webhook]).apply(([s, w]) => ({ ...s, 'baton-webhook': { secret: w } }))
    : secrets;
}
