import { readFileSync } from 'node:fs';
import { clientsFromKubeconfigFile, type KubeClients } from '@baton/kube';
import { type Cluster, startCluster } from '@baton/testenv';
import { pushCliImage } from '@baton/testenv/images';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';

// The baton CLI image (what the fleet's Indexed Job engine runs by default) built from these sources, pulled by digest
// and run by a real node's kubelet and containerd, as the restricted pod security standard asks.
const ROOT = new URL('../../../', import.meta.url).pathname;
const { version } = JSON.parse(readFileSync(`${ROOT}packages/cli/package.json`, 'utf8')) as { version: string };

let cluster: Cluster;
let k: KubeClients;
let image: string;

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  k = clientsFromKubeconfigFile(cluster.kubeconfigPath);
  image = await pushCliImage(cluster.realNode!.pushImage);
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
});

/** Runs the image once with `args` and returns the finished pod and its log. */
async function runOnce(name: string, args: string[]): Promise<{ pod: V1Pod; log: string }> {
  await k.core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'baton',
            image,
            args,
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
          },
        ],
      },
    },
  });
  let pod: V1Pod | undefined;
  await eventually(
    async () => {
      pod = await k.core.readNamespacedPod({ namespace: 'default', name });
      return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
    },
    120_000,
    `pod ${name} finished`,
  );
  return { pod: pod!, log: await k.core.readNamespacedPodLog({ namespace: 'default', name }) };
}

describe('the baton CLI image on a real node', () => {
  it('is pinned by digest and runs the bundled CLI as 65532: baton --version', async () => {
    expect(image).toMatch(/^ghcr\.io\/baton-dev\/baton@sha256:[0-9a-f]{64}$/);
    const { pod, log } = await runOnce('baton-version', ['--version']);
    expect(pod.status?.phase).toBe('Succeeded');
    expect(log.trim()).toBe(version);
    expect(pod.status?.containerStatuses?.[0]?.imageID).toContain(image.split('@')[1]);
  });

  it('carries the shard command, which refuses to run outside an Indexed Job with a clear error', async () => {
    const { pod, log } = await runOnce('baton-shard', ['fleet', 'shard', '--wave', 'w', '--namespace', 'default']);
    expect(pod.status?.phase).toBe('Failed');
    expect(log).toContain('JOB_COMPLETION_INDEX is not set');
  });
});
