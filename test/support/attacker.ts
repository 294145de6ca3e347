// What a thief of a bootstrap token tries, recorded attempt by attempt: each call's HTTP status and the apiserver's
// message (which names the plan digest when the run's admission policy refused it).
import type { KubeObject } from '@baton/kube';
import * as k8s from '@kubernetes/client-node';
import { type adminClients, tokenClients } from './kube.js';

/** One attempt's outcome: 200 when it went through. */
export interface AttemptResult {
  readonly status: number;
  readonly message: string;
}

/** A token for the run's ServiceAccount, requested by the operator: what a thief of the bootstrap token would hold. */
export async function stealToken(
  admin: ReturnType<typeof adminClients>,
  namespace: string,
  serviceAccount: string,
): Promise<string> {
  const r = await admin.core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: { spec: { expirationSeconds: 3600, audiences: [] } },
  });
  return r.status?.token ?? '';
}

/** The name of the running handoff's bootstrap ServiceAccount (`baton-bootstrap-<runId>`) in `namespace`. */
export async function bootstrapServiceAccount(
  admin: ReturnType<typeof adminClients>,
  namespace = 'baton-system',
): Promise<string> {
  const sa = (await admin.core.listNamespacedServiceAccount({ namespace })).items.find((s) =>
    s.metadata?.name?.startsWith('baton-bootstrap-'),
  );
  if (!sa?.metadata?.name)
    throw new Error(`no baton-bootstrap-* ServiceAccount in ${namespace}: is a handoff running?`);
  return sa.metadata.name;
}

/** Clients for `token`, an `attempt` that records each call's outcome in `out`, and server-side apply. */
export function attacker(kubeconfigPath: string, token: string) {
  const c = tokenClients(kubeconfigPath, token);
  const out: Record<string, AttemptResult> = {};
  const attempt = async (name: string, call: () => Promise<unknown>): Promise<void> => {
    try {
      await call();
      out[name] = { status: 200, message: '' };
    } catch (err) {
      const e = err as k8s.ApiException<string>;
      out[name] = { status: e.code ?? 0, message: String(e.body ?? '') };
    }
  };
  const apply = (o: KubeObject, fieldManager = 'baton-bootstrap') =>
    c.objects.patch(o, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
  return { c, out, attempt, apply };
}
