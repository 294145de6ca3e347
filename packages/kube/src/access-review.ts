import type { KubeClients } from './kube-clients.js';
import { kubeCall } from './kube-error.js';
import { INSTALL_KINDS, type KubeObject, kindsFromCrds } from './kube-object.js';

/** One request a credential might make: a verb on one object. */
export interface AccessRequest {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name: string;
}

/**
 * Asks the API server, as the credential of `clients` (a SelfSubjectAccessReview: no object is touched), whether it
 * may make `request`.
 * @throws {KubeApiError} when the review itself fails (a token that no longer authenticates gets 401).
 */
export async function isAllowed(clients: KubeClients, request: AccessRequest): Promise<boolean> {
  const r = await kubeCall(`SelfSubjectAccessReview ${request.verb} ${request.resource}/${request.name}`, () =>
    clients.authz.createSelfSubjectAccessReview({
      body: {
        spec: {
          resourceAttributes: {
            verb: request.verb,
            group: request.group,
            resource: request.resource,
            name: request.name,
            ...(request.namespace ? { namespace: request.namespace } : {}),
          },
        },
      },
    }),
  );
  return r.status?.allowed === true;
}

/**
 * The reads that must be refused once a bootstrap identity's privilege has ended: `get` on every planned Secret (the
 * pull credential, the webhook key) and on the first planned object, whatever its kind. `wholeSet`: as for
 * `computeBootstrapRules`, the set `objects` were narrowed from.
 */
export function planReads(objects: readonly KubeObject[], wholeSet: readonly KubeObject[] = objects): AccessRequest[] {
  const kinds = { ...kindsFromCrds([...objects, ...wholeSet]), ...INSTALL_KINDS };
  const picked = objects.filter((o, i) => i === 0 || o.kind === 'Secret');
  return picked.flatMap((o) => {
    const info = kinds[o.kind];
    if (!info) return [];
    return [
      {
        verb: 'get',
        group: info.group,
        resource: info.resource,
        ...(info.isNamespaced && o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
        name: o.metadata.name,
      },
    ];
  });
}
