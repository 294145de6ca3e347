import type { KubeObject } from '@baton/kube';

interface PodSpecImages {
  readonly containers?: readonly { image?: string }[];
  readonly initContainers?: readonly { image?: string }[];
}

/** Where each workload kind keeps its pod spec. */
function podSpecOf(o: KubeObject): PodSpecImages | undefined {
  const spec = (o as { spec?: Record<string, unknown> }).spec;
  if (!spec) return undefined;
  if (o.kind === 'Pod') return spec as PodSpecImages;
  if (o.kind === 'CronJob')
    return (spec.jobTemplate as { spec?: { template?: { spec?: PodSpecImages } } } | undefined)?.spec?.template?.spec;
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'ReplicationController'].includes(o.kind))
    return (spec.template as { spec?: PodSpecImages } | undefined)?.spec;
  return undefined;
}

/** Every image the objects' pods would run (containers and init containers), in order, each once. */
export function podImages(objects: readonly KubeObject[]): string[] {
  const images = objects.flatMap((o) => {
    const pod = podSpecOf(o);
    return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].map((c) => c.image ?? '');
  });
  return [...new Set(images.filter((i) => i !== ''))];
}
