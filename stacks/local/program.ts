import { type HandoffStackOutputs, handoffFromConfig } from '@baton/pulumi';
import * as pulumi from '@pulumi/pulumi';

/**
 * Hands the local test-bed cluster named by the secret config `kubeconfig` to baton-controller; the Git source, pull
 * credential and audit paths come from config too (see Pulumi.yaml and `STACK_CONFIG_KEYS`).
 */
export function localProgram(): HandoffStackOutputs {
  return handoffFromConfig(new pulumi.Config().requireSecret('kubeconfig'));
}
