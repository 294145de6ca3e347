import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';

/** Stack outputs of {@link exampleProgram}. */
export interface ExampleOutputs {
  readonly namespace: pulumi.Output<string>;
  readonly configMap: pulumi.Output<string>;
  readonly greeting: pulumi.Output<string>;
}

/**
 * Creates a Namespace and a ConfigMap in the cluster named by the secret config `kubeconfig` (the contents of a
 * kubeconfig file). The provider is explicit, so the program never falls back to an ambient ~/.kube/config.
 * Config (see Pulumi.yaml): `kubeconfig` (secret, required), `namespace`, `greeting`.
 */
export function exampleProgram(): ExampleOutputs {
  const config = new pulumi.Config();
  const provider = new k8s.Provider('cluster', {
    kubeconfig: config.requireSecret('kubeconfig'),
    enableServerSideApply: true,
  });
  const ns = new k8s.core.v1.Namespace(
    'ns',
    { metadata: { name: config.get('namespace') ?? 'baton-example' } },
    { provider },
  );
  const cm = new k8s.core.v1.ConfigMap(
    'greeting',
    {
      metadata: { namespace: ns.metadata.name, name: 'greeting' },
      data: { greeting: config.get('greeting') ?? 'hello' },
    },
    { provider },
  );
  return {
    namespace: ns.metadata.name,
    configMap: cm.metadata.name,
    greeting: cm.data.apply((d) => d.greeting ?? ''),
  };
}
