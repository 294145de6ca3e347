// The confinement on the cluster: installed before the mint, closed after the push, removed at the end, and probed
// as the confined identity (the policy itself is ./confinement-policy.ts).
import { ConfinementError } from '@baton/errors';
import {
  ADMISSION_API,
  CLOSED_MARK,
  CONFINEMENT_FIELD_MANAGER,
  type Confinement,
  closedPolicy,
} from './confinement-policy.js';
import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf, toKubeApiError } from './kube-error.js';
import { describeObject, type KubeObject } from './kube-object.js';
/** When each stage of a confinement happened. */
export interface ConfinementTimes {
  readonly installedAt: Date;
}

/**
 * Creates the policy, then its binding, with the operator's credential (field manager {@link CONFINEMENT_FIELD_MANAGER}).
 * A binding to an absent policy would match nothing, so the order matters.
 * @throws {ConfinementError} naming the object and the fix (e.g. the operator may not write admission policies).
 */
export async function installConfinement(operator: KubeClients, c: Confinement): Promise<void> {
  for (const o of [c.policy, c.binding]) {
    try {
      await operator.objects.create(o, undefined, undefined, CONFINEMENT_FIELD_MANAGER);
    } catch (err) {
      const status = statusOf(err);
      const cause = toKubeApiError(err, `create ${describeObject(o)}`);
      throw new ConfinementError(
        `could not install the confinement of the bootstrap identity (${cause.message})${status === 403 ? '; the operator needs create, update and delete on validatingadmissionpolicies and validatingadmissionpolicybindings (admissionregistration.k8s.io)' : status === 404 ? '; the API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.34 or newer is required)' : ''}; nothing was pushed`,
        { cause, details: { object: describeObject(o), status } },
      );
    }
  }
}

/**
 * Replaces the policy by one that denies every write of the identity (the push is over; the token may still
 * authenticate for the API server's token cache). Takes effect within about a second.
 * @throws {KubeApiError} when the policy cannot be replaced.
 */
export async function closeConfinement(operator: KubeClients, c: Confinement): Promise<void> {
  await kubeCall(`close ${describeObject(c.policy)} (deny every write)`, async () => {
    const live = await operator.objects.read(c.policy);
    await operator.objects.replace(
      { ...closedPolicy(c), metadata: { ...c.policy.metadata, resourceVersion: live.metadata?.resourceVersion ?? '' } },
      undefined,
      undefined,
      CONFINEMENT_FIELD_MANAGER,
    );
  });
}

/**
 * Deletes the binding, then the policy; either already gone is fine.
 * @throws {KubeApiError} when a deletion fails for another reason.
 */
export async function removeConfinement(operator: KubeClients, name: string): Promise<string[]> {
  const deleted: string[] = [];
  for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
    try {
      await operator.objects.delete({ apiVersion: ADMISSION_API, kind, metadata: { name } });
      deleted.push(`${kind}/${name}`);
    } catch (err) {
      if (statusOf(err) !== 404) throw toKubeApiError(err, `delete ${kind}/${name}`);
    }
  }
  return deleted;
}

/** The outcome of a confinement probe. */
export interface ConfinementProbe {
  readonly denied: boolean;
  /** HTTP status of the probe request. */
  readonly status: number;
  /** The API server's message (names the policy when it denied; never holds a secret). */
  readonly message: string;
}

/**
 * Asks the API server, as the confined identity, to create (dry run: nothing is stored) an object the plan does not
 * contain but RBAC allows, and reports whether the confinement denied it: the denial must name the policy and the plan
 * digest, so an RBAC 403 or another policy does not count. The probe is a ServiceAccount in `namespace` (every install
 * set creates one), or `like` renamed: a set without a ServiceAccount (a repair's) probes with one of its own kinds,
 * which its rules allow to create (`create` cannot be limited by name).
 * @throws {KubeApiError} on a transport failure.
 */
export function probeConfinement(
  confined: KubeClients,
  c: Confinement,
  namespace: string,
  like?: KubeObject,
): Promise<ConfinementProbe> {
  const name = `${c.name}-probe`.slice(0, 63).replace(/-+$/, '');
  const probe: KubeObject = like
    ? probeLike(like, name)
    : { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } };
  return deniedBy(c, c.planDigest, () => confined.objects.create(probe, undefined, 'All', c.fieldManager));
}

// A valid object of `o`'s kind under another name; a Secret without its values (none need to travel for a probe).
function probeLike(o: KubeObject, name: string): KubeObject {
  const metadata = { name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) };
  if (o.kind === 'Secret')
    return { apiVersion: o.apiVersion, kind: o.kind, metadata, type: (o as { type?: string }).type ?? 'Opaque' };
  return { ...o, metadata };
}

/**
 * Asks the API server, as the confined identity, to re-apply a planned object (dry run: nothing is stored), and
 * reports whether the closed confinement denied it: once the push is over, not even the plan may be written.
 * @throws {KubeApiError} on a transport failure.
 */
export function probeClosed(confined: KubeClients, c: Confinement, planned: KubeObject): Promise<ConfinementProbe> {
  return deniedBy(c, CLOSED_MARK, () => confined.rest.apply(planned, { fieldManager: c.fieldManager, dryRun: true }));
}

async function deniedBy(c: Confinement, mark: string, write: () => Promise<unknown>): Promise<ConfinementProbe> {
  try {
    await write();
    return { denied: false, status: 200, message: '' };
  } catch (err) {
    const status = statusOf(err);
    const e = toKubeApiError(err, 'confinement probe');
    if (status === 0) throw e;
    return {
      denied: status === 403 && e.message.includes(c.name) && e.message.includes(mark),
      status,
      message: e.message,
    };
  }
}
