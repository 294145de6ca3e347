import { expectedRevisionValue } from '@baton/core/profile';
import type { KubeRestClient } from '@baton/kube/rest';
import type { Profile } from './profile.js';

/**
 * Test helper: writes the status that the profile's real controller writes once it has reconciled
 * `revision` (Flux kustomize-controller, Argo CD application-controller, or baton-controller), so a
 * profile can be exercised on a cluster where the upstream controller does not run.
 * @throws KubeApiError when the revision object does not exist.
 */
export async function simulateReconciledStatus(
  profile: Profile,
  kube: KubeRestClient,
  revision: string,
  options: { isHealthy?: boolean; ref?: string } = {},
): Promise<void> {
  const obj = profile.revision.object;
  const path = `${await kube.collectionPath(obj.apiVersion, obj.kind, obj.namespace)}/${obj.name}`;
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const healthy = options.isHealthy ?? true;
  const ref = options.ref ?? 'main';
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
  // Every rule object (the revision object and the sources, e.g. Flux's Kustomization and GitRepository) reports the
  // commit in its own path and format, Ready as planned.
  for (const rule of [profile.revision, ...profile.sources]) {
    const value = expectedRevisionValue(rule, revision, ref);
    const status: Record<string, unknown> = {
      observedGeneration: 1,
      conditions: [{ ...ready, reason: healthy ? 'Succeeded' : 'ApplyFailed' }],
    };
    setPath(status, rule.path.replace(/^status\./, ''), value);
    if (rule.path === 'status.lastAppliedRevision') status.lastAttemptedRevision = value;
    const r = rule.object;
    const rulePath = `${await kube.collectionPath(r.apiVersion, r.kind, r.namespace)}/${r.name}`;
    await kube.call('PATCH', `${rulePath}/status`, { status }, 'application/merge-patch+json');
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = target;
  for (const p of parts.slice(0, -1)) {
    cur[p] ??= {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts.at(-1)!] = value;
}
