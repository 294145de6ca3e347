import { clientsFromKubeConfig } from '@baton/kube';
import * as k8s from '@kubernetes/client-node';

/** Clients for the admin kubeconfig of a test cluster. */
export function adminClients(kubeconfigPath: string) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return clientsFor(kc);
}

/** Clients that authenticate with a bearer token only (no client certificate), against the same server and CA. */
export function tokenClients(kubeconfigPath: string, token: string) {
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(kubeconfigPath);
  const cluster = admin.getCurrentCluster()!;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: cluster.server, caData: cluster.caData, skipTLSVerify: false }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return clientsFor(kc);
}

/** The same clients baton builds (one factory), so a test reads objects exactly as the product does. */
function clientsFor(kc: k8s.KubeConfig) {
  return clientsFromKubeConfig(kc);
}

/** The HTTP status of a failed client-node call (ApiException.code), or 0 when it is not an API error. */
export function statusOf(err: unknown): number {
  return err instanceof k8s.ApiException ? err.code : 0;
}

/** Resolves to the status of `call`: 200 when it succeeds, the API error's code when it fails. */
export async function statusOfCall(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
    return 200;
  } catch (err) {
    const s = statusOf(err);
    if (s === 0) throw err;
    return s;
  }
}

/** Polls `check` every `intervalMs` until it returns true or `timeoutMs` passes; returns the elapsed ms. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 200,
): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** ValidatingAdmissionPolicies and bindings that carry baton's bootstrap labels (a confinement left behind). */
export async function confinementsLeft(c: { objects: k8s.KubernetesObjectApi }): Promise<string[]> {
  const out: string[] = [];
  for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
    const list = await c.objects.list(
      'admissionregistration.k8s.io/v1',
      kind,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      'baton.dev/component=bootstrap-credential',
    );
    for (const o of list.items) out.push(`${kind}/${o.metadata?.name}`);
  }
  return out;
}

/**
 * Deletes a namespace and waits until it is gone (the controller-manager finalizes it): a later handoff on the same
 * cluster then pushes into a clean namespace, not over an earlier controller's objects.
 */
