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
import { withDeadline } from '../clock.js';
import { type HandoffRun, safeError } from './run.js';

/**
 * The Kubernetes 1.x minors the compatibility suite (`pnpm test:compat`, docs/compatibility.md) hands off on.
 * Preflight refuses an older server (nothing backs a promise there) and warns for a newer one.
 */
export const TESTED_KUBERNETES_MINORS = [34, 35, 36, 37] as const;

/** The oldest Kubernetes minor baton runs against: the oldest tested. */
export const MIN_KUBERNETES_MINOR = TESTED_KUBERNETES_MINORS[0];

/** The newest tested Kubernetes minor; a newer server gets a warning, not a refusal. */
export const MAX_TESTED_KUBERNETES_MINOR = Math.max(...TESTED_KUBERNETES_MINORS);

/** How a server's version relates to the tested ones. */
export type KubernetesSupport = 'older' | 'tested' | 'newer';

/**
 * Places a `/version` answer against the tested minors. Managed clusters stamp minors like `34+` and git versions
 * like `v1.34.2-eks-1a2b3c`; the minor falls back to the git version when it is not a number.
 */
export function kubernetesSupport(version: {
  readonly major: string;
  readonly minor: string;
  readonly gitVersion?: string;
}): KubernetesSupport {
  const fromGit = /^v?(\d+)\.(\d+)/.exec(version.gitVersion ?? '');
  const ma = Number.parseInt(version.major, 10) || Number(fromGit?.[1] ?? Number.NaN);
  const mi = Number.parseInt(version.minor, 10);
  const minor = Number.isNaN(mi) ? Number(fromGit?.[2] ?? Number.NaN) : mi;
  if (Number.isNaN(ma) || Number.isNaN(minor)) return 'older';
  if (ma !== 1) return ma > 1 ? 'newer' : 'older';
  if (minor < MIN_KUBERNETES_MINOR) return 'older';
  return minor > MAX_TESTED_KUBERNETES_MINOR ? 'newer' : 'tested';
}

/**
 * Why an older API server is refused (by `baton up` and `baton plan` alike): not a missing API (ValidatingAdmissionPolicy
 * v1 is GA since 1.30, TokenRequest since 1.22) but the tested range: the confinement's CEL and the scope checks are
 * proven on the tested minors only.
 */
export function olderClusterReason(version: { gitVersion?: string; major: string; minor: string }): string {
  const v = version.gitVersion || `${version.major}.${version.minor}`;
  return `the API server is Kubernetes ${v}, older than every version baton is tested on (${TESTED_LIST}); baton needs 1.${MIN_KUBERNETES_MINOR} or newer, the oldest minor on which its confinement of the bootstrap credential is proven by the compatibility suite (docs/compatibility.md); upgrade the cluster to 1.${MIN_KUBERNETES_MINOR} or newer`;
}

/** Whether a `/version` major and minor (`1`, `36+`) is the oldest tested minor or newer. */
export function isSupportedKubernetes(major: string, minor: string): boolean {
  return kubernetesSupport({ major, minor }) !== 'older';
}

const TESTED_LIST = TESTED_KUBERNETES_MINORS.map((m) => `1.${m}`).join(', ');

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
  const support = kubernetesSupport(version);
  if (support === 'older') throw new KubeApiError(olderClusterReason(version));
  if (support === 'newer') {
    run.log.warn(
      { serverVersion: version.gitVersion, testedMinors: TESTED_LIST },
      `the API server is Kubernetes ${version.gitVersion}, newer than every version baton is tested on (${TESTED_LIST}); continuing, but check the confinement with \`baton plan\` first and report a difference`,
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
  run.fact(
    `Kubernetes ${version.gitVersion}${support === 'newer' ? ` (newer than tested ${TESTED_LIST})` : ''}, operator ${run.operatorName}`,
  );
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
    ...(run.deps.isLockHolderGone ? { isHolderGone: run.deps.isLockHolderGone } : {}),
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
      // A renewal in flight against a stalled API server must not hold the run's exit: each wait is bounded, and a
      // Lease left behind expires by itself (its holder's PID is dead, so the next run takes it over).
      const requestMs = run.deps.requestTimeoutMs ?? 10_000;
      await withDeadline(clock, requestMs, 'the last lock renewal', () => renewing).catch(() => {});
      await withDeadline(clock, requestMs, 'releasing the handoff lock', () =>
        releaseHandoffLock(operator, lock),
      ).catch((err: unknown) => run.log.error({ err: safeError(err) }, 'could not release the lock'));
    },
  };
}
