import { describeObject, INSTALL_KINDS, type KubeClients, kubeCall, statusOf, toKubeApiError } from '@baton/kube';
import { isSupportedKubernetes, olderClusterReason, servesAdmissionPolicies } from './handoff/preflight.js';
import type { LoadedPlan } from './handoff-plan.js';
import { loadManifestSet } from './manifest-set.js';
import { readReceipt } from './receipt.js';

/** The server-side dry run of one planned object as the operator (nothing is stored). */
export interface DryRunResult {
  /** Kind/namespace/name. */
  readonly object: string;
  /** `ok`: the server would accept it; `refused`: it would not (see `message`); `deferred`: it cannot be asked yet. */
  readonly result: 'ok' | 'refused' | 'deferred';
  readonly message?: string;
}

/** What `baton plan --kubeconfig` learns from a cluster without writing to it or minting anything. */
export interface ClusterPlanCheck {
  /** The API server's `gitVersion`. */
  readonly version: string;
  /** The operator's username (SelfSubjectReview). */
  readonly operator: string;
  /** What the preflight of `baton up` would refuse, each with the fix; empty when it would pass. */
  readonly refusals: readonly string[];
  /** What `baton up` would do first or differently (e.g. create the baton namespace, only re-check a handed-off cluster). */
  readonly notes: readonly string[];
  readonly dryRun: readonly DryRunResult[];
}

/**
 * Asks the cluster what `baton up` of this plan would meet, with the operator's credential and reads, discovery,
 * reviews and dry runs only: the API server's version and APIs (as preflight checks them), the receipt, the baton
 * namespace, and a server-side dry-run apply of every planned object. Nothing is stored and no credential is minted.
 * @throws {KubeApiError} when the API server cannot be reached or a read fails other than as "not found".
 * @throws {ConfigError} when the plan's manifest set is refused (as `baton up` would refuse it).
 */
export async function checkPlanOnCluster(
  operator: KubeClients,
  loaded: LoadedPlan,
  signal?: AbortSignal,
): Promise<ClusterPlanCheck> {
  const { plan } = loaded;
  const set = loadManifestSet(plan);
  const refusals: string[] = [];
  const notes: string[] = [];
  const version = await kubeCall(
    'read the API server version (is the cluster reachable?)',
    () => operator.version.getCode(),
    'check --kubeconfig/--context and that the API server is up',
  );
  if (!isSupportedKubernetes(version.major, version.minor)) refusals.push(olderClusterReason(version));
  const core = await kubeCall('discover core/v1 resources', () => operator.core.getAPIResources());
  if (!core.resources.some((r) => r.name === 'serviceaccounts/token'))
    refusals.push(
      'the API server does not offer TokenRequest (serviceaccounts/token); baton mints the push credential with it',
    );
  if (!(await servesAdmissionPolicies(operator)))
    refusals.push(
      'the API server does not serve admissionregistration.k8s.io/v1 validatingadmissionpolicies; enable that API (Kubernetes 1.30 or newer)',
    );
  const who = await kubeCall('SelfSubjectReview (who is the operator?)', () =>
    operator.authn.createSelfSubjectReview({ body: {} }),
  );
  const receipt = await readReceipt(operator, plan.batonNamespace);
  if (receipt?.outcome === 'handed-off')
    notes.push(
      `the cluster is handed off (run ${receipt.runId}, revision ${receipt.revision}): baton up only re-checks it and pushes nothing`,
    );
  if (!(await exists(() => operator.core.readNamespace({ name: plan.batonNamespace }))))
    notes.push(
      `namespace ${plan.batonNamespace} does not exist: baton up creates it (lock, receipt, bootstrap identity)`,
    );
  const dryRun: DryRunResult[] = [];
  for (const { object } of set.objects) {
    signal?.throwIfAborted();
    dryRun.push(await dryRunOne(operator, object, plan.push.fieldManager, plan.controller.namespace));
  }
  return {
    version: version.gitVersion,
    operator: who.status?.userInfo?.username ?? 'unknown',
    refusals,
    notes,
    dryRun,
  };
}

type Planned = Parameters<KubeClients['rest']['apply']>[0];

async function dryRunOne(
  operator: KubeClients,
  o: Planned,
  fieldManager: string,
  controllerNamespace: string,
): Promise<DryRunResult> {
  const object = describeObject(o);
  try {
    await operator.rest.apply(o, { fieldManager, dryRun: true });
    return { object, result: 'ok' };
  } catch (err) {
    const status = statusOf(err);
    const message = toKubeApiError(err, `dry-run server-side apply of ${object}`).message;
    // Before the push neither the controller namespace nor the set's CRDs exist; the handoff creates them first.
    // A kind the API server does not serve yet fails in discovery (client-node's own error, no status) or with 404.
    if ((status === 404 || status === 0) && !INSTALL_KINDS[o.kind])
      return {
        object,
        result: 'deferred',
        message: `${o.kind} is defined by a CRD of the set: served once the push applies it`,
      };
    if (status === 404 && o.metadata.namespace === controllerNamespace)
      return { object, result: 'deferred', message: `namespace ${controllerNamespace} is created by the push first` };
    return { object, result: 'refused', message };
  }
}

async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw toKubeApiError(err, 'read');
  }
}
