import { KubeApiError } from '@baton/errors';
import {
  acquireHandoffLock,
  type HandoffLock,
  type KubeClients,
  kubeCall,
  LockHeldError,
  releaseHandoffLock,
  renewHandoffLock,
  statusOf,
  toKubeApiError,
} from '@baton/kube';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { type HandoffRun, safeError } from './run.js';

/** The oldest Kubernetes minor version baton runs against: ValidatingAdmissionPolicy is GA (v1) from 1.30. */
export const MIN_KUBERNETES_MINOR = 30;

/** Whether a `/version` major and minor (`1`, `36+`) is Kubernetes 1.30 or newer. */
export function isSupportedKubernetes(major: string, minor: string): boolean {
  const ma = Number.parseInt(major, 10);
  const mi = Number.parseInt(minor, 10);
  return ma > 1 || (ma === 1 && mi >= MIN_KUBERNETES_MINOR);
}

/**
 * Reads the API server's version, identity and the APIs the handoff needs (TokenRequest, ValidatingAdmissionPolicy),
 * ensures the baton namespace, and notes the operator's username.
 * @throws {KubeApiError} naming what is missing and what to do.
 */
export async function checkCluster(run: HandoffRun): Promise<void> {
  const { operator } = run.deps;
  const version = await kubeCall(
    'read the API server version (is the cluster reachable?)',
    () => operator.version.getCode(),
    'check --kubeconfig/--context and that the API server is up',
  );
  if (!isSupportedKubernetes(version.major, version.minor)) {
    throw new KubeApiError(
      `the API server is Kubernetes ${version.gitVersion}; baton needs 1.${MIN_KUBERNETES_MINOR} or newer, where ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) confines the bootstrap credential to the plan; upgrade the cluster`,
    );
  }
  const core = await kubeCall('discover core/v1 resources', () => operator.core.getAPIResources());
  if (!core.resources.some((r) => r.name === 'serviceaccounts/token')) {
    throw new KubeApiError(
      'the API server does not offer TokenRequest (serviceaccounts/token); baton needs it to mint a short-lived bootstrap credential',
    );
  }
  if (!(await servesAdmissionPolicies(operator))) {
    throw new KubeApiError(
      'the API server does not serve admissionregistration.k8s.io/v1 validatingadmissionpolicies; baton confines the bootstrap credential with one (Kubernetes 1.30 or newer, with the admissionregistration.k8s.io/v1 API enabled)',
    );
  }
  const who = await kubeCall('SelfSubjectReview (who is the operator?)', () =>
    operator.authn.createSelfSubjectReview({ body: {} }),
  );
  run.operatorName = who.status?.userInfo?.username ?? 'unknown';
  run.fact(`Kubernetes ${version.gitVersion}, operator ${run.operatorName}`);
  try {
    await operator.core.readNamespace({ name: run.plan.batonNamespace });
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    await createNamespaceIfAbsent(operator, run.plan.batonNamespace, 'baton');
  }
}

/** Whether the API server serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (discovery, no list). */
// Discovery, not a list: an operator without rights on admission policies must fail at the install, saying so.
export async function servesAdmissionPolicies(operator: KubeClients): Promise<boolean> {
  try {
    const r = await operator.kc.makeApiClient(AdmissionregistrationV1Api).getAPIResources();
    return r.resources.some((x) => x.name === 'validatingadmissionpolicies');
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw toKubeApiError(err, 'discover admissionregistration.k8s.io/v1');
  }
}

/** Creates a namespace, treating "already exists" (another run or the operator made it meanwhile) as done. */
export async function createNamespaceIfAbsent(
  operator: KubeClients,
  name: string,
  fieldManager: string,
): Promise<void> {
  try {
    await operator.core.createNamespace({ fieldManager, body: { metadata: { name } } });
  } catch (err) {
    if (statusOf(err) !== 409) throw toKubeApiError(err, `create Namespace ${name}`);
  }
}

/** A held handoff Lease that renews itself; {@link HeldLock.release} stops renewing and releases it, never throwing. */
export interface HeldLock {
  readonly lock: HandoffLock;
  release(): Promise<void>;
}

/**
 * Takes the cluster's handoff Lease and renews it every third of its duration: the push budget bounds mint to
 * takeover, but cleanup, revoke, the proof, record and a wait for the audit log's file lock have no common bound,
 * and a Lease that lapsed mid-run would let another host mint a second credential. Losing it aborts the run's
 * signal (the push stops; revoke, prove and record still run).
 * @throws {LockHeldError} when another live run holds it.
 */
export async function holdLock(run: HandoffRun): Promise<HeldLock> {
  const { operator, actor } = run.deps;
  const { plan, clock } = run;
  const lockSeconds = plan.push.budgetSeconds + plan.takeover.timeoutSeconds + 120;
  const lock = await acquireHandoffLock(operator, {
    namespace: plan.batonNamespace,
    holder: { runId: run.runId, user: `${actor.user} (${run.operatorName})`, host: actor.host, pid: actor.pid },
    durationSeconds: lockSeconds,
    now: () => clock.now(),
    isPidAlive: run.deps.isPidAlive,
  });
  run.lock = lock;
  if (lock.tookOverFrom) run.log.warn({ staleHolder: lock.tookOverFrom }, 'took over a stale handoff lock');
  const stop = new AbortController();
  const renewing = (async () => {
    for (;;) {
      try {
        await clock.sleep(run.deps.lockRenewIntervalMs ?? (lockSeconds * 1000) / 3, stop.signal);
      } catch {
        return;
      }
      try {
        await renewHandoffLock(operator, lock, clock.now());
      } catch (err) {
        if (err instanceof LockHeldError) {
          run.log.error({ err: safeError(err) }, 'lost the handoff lock');
          run.lockLost.abort(err);
          return;
        }
        run.log.warn({ err: safeError(err) }, 'could not renew the handoff lock; retrying');
      }
    }
  })();
  return {
    lock,
    async release() {
      stop.abort();
      await renewing;
      await releaseHandoffLock(operator, lock).catch((err: unknown) =>
        run.log.error({ err: safeError(err) }, 'could not release the lock'),
      );
    },
  };
}
