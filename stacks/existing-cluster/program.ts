import { ConfigError } from '@baton/errors';
import { type HandoffStackOutputs, handoffFromConfig } from '@baton/pulumi';
import * as pulumi from '@pulumi/pulumi';

/**
 * The kubeconfig of the cluster to hand off: the secret config `kubeconfig`, or the output `clusterOutput`
 * (@default kubeconfig) of the stack `clusterStack` that created the cluster, kept secret either way.
 * @throws {ConfigError} when neither or both are set.
 */
export function clusterKubeconfig(config = new pulumi.Config()): pulumi.Output<string> {
  const stack = config.get('clusterStack');
  const inline = config.getSecret('kubeconfig');
  if ((stack === undefined) === (inline === undefined)) {
    throw new ConfigError(
      'set exactly one of the config keys kubeconfig (`pulumi config set --secret kubeconfig "$(cat FILE)"`) and clusterStack (the stack whose output is the kubeconfig)',
    );
  }
  if (inline) return inline;
  const output = config.get('clusterOutput') ?? 'kubeconfig';
  return pulumi.secret(new pulumi.StackReference(stack!).requireOutput(output).apply(String));
}

/** Hands the cluster to baton-controller (see README.md for EKS, GKE and AKS). */
export function existingClusterProgram(): HandoffStackOutputs {
  return handoffFromConfig(clusterKubeconfig());
}
