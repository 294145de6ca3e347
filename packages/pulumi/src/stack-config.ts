import * as pulumi from '@pulumi/pulumi';
import { controllerOf } from './controllers.js';
import { Handoff } from './handoff.js';

/**
 * The config keys a stack of baton's reads (`pulumi config set <key> <value>`; secrets with `--secret`):
 * - `profile` (@default baton-controller): the controller profile (`baton-controller`, `flux`, …) whose
 *   `rules/profile.yaml` the push set carries;
 * - `gitUrl`, `gitRef` (@default main), `gitPath` (@default .), `gitRevision` (a commit; @default resolved from the ref);
 * - `manifests`: the rendered push set directory (the same files Git carries), relative to the stack;
 * - `pullUsername` and `pullPassword` (secret): the read-only Git credential the controller pulls with;
 * - `webhookSecret` (secret, optional): the push-only `baton-webhook` Secret;
 * - `clusterName` (@default the stack name), `takeoverTimeoutSeconds` (@default 300);
 * - `auditLog` (@default audit/handoffs.jsonl) and `signingKey` (@default audit/baton.key), relative to the stack;
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
  'webhookSecret',
  'clusterName',
  'takeoverTimeoutSeconds',
  'auditLog',
  'signingKey',
  'journalDir',
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
  const webhook = config.getSecret('webhookSecret');
  const journalDir = config.get('journalDir');
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
    ...(webhook ? { pushSecrets: { 'baton-webhook': { secret: webhook } } } : {}),
    takeover: { timeoutSeconds: config.getNumber('takeoverTimeoutSeconds') ?? 300 },
    audit: {
      logPath: config.get('auditLog') ?? 'audit/handoffs.jsonl',
      signingKeyPath: config.get('signingKey') ?? 'audit/baton.key',
    },
    ...(journalDir ? { journalDir } : {}),
  });
  return { receipt: handoff.receipt, plan: handoff.plan };
}
