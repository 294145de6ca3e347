import type { KubeClient } from './kube-client.js';
import type { Profile } from './profile.js';

/**
 * Test helper: writes the status that the profile's real controller writes once it has reconciled
 * `revision` (Flux kustomize-controller, Argo CD application-controller, or baton-controller), so a
 * profile can be exercised on a cluster where the upstream controller does not run.
 * @throws KubeApiError when the revision object does not exist.
 */
export async function simulateReconciledStatus(
  profile: Profile,
  kube: KubeClient,
  revision: string,
  options: { isHealthy?: boolean } = {},
): Promise<void> {
  const ref = profile.revision.object;
  const path = `${await kube.collectionPath(ref.apiVersion, ref.kind, ref.namespace)}/${ref.name}`;
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const healthy = options.isHealthy ?? true;
  const ready = {
    type: 'Ready',
    status: healthy ? 'True' : 'False',
    reason: healthy ? 'ReconciliationSucceeded' : 'ReconciliationFailed',
    message: healthy ? `Applied revision: ${revision}` : 'health check failed',
    lastTransitionTime: now,
  };
  if (profile.name === 'argocd') {
    // Argo CD's Application CRD has no status subresource: the application controller patches the object.
    await kube.call(
      'PATCH',
      path,
      {
        status: {
          sync: { status: 'Synced', revision },
          health: { status: healthy ? 'Healthy' : 'Degraded' },
          reconciledAt: now,
        },
      },
      'application/merge-patch+json',
    );
    return;
  }
  const status =
    profile.name === 'flux'
      ? {
          lastAppliedRevision: `main@sha1:${revision}`,
          lastAttemptedRevision: `main@sha1:${revision}`,
          observedGeneration: 1,
          conditions: [ready],
        }
      : {
          lastAppliedRevision: revision,
          lastAttemptedRevision: revision,
          conditions: [{ ...ready, reason: healthy ? 'Succeeded' : 'ApplyFailed' }],
        };
  await kube.call('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
}
