import type { KubeClients } from './kube-clients.js';
import { kubeCall } from './kube-error.js';
import { describeObject, type KubeObject } from './kube-object.js';

/** Options of {@link serverSideApply}. */
export interface ServerSideApplyOptions {
  /** The field manager the API server records in `managedFields`. */
  readonly fieldManager: string;
  /** Take ownership of fields another manager owns. @default false */
  readonly force?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Server-side-applies `objects` in order with `clients`, one request each.
 * @returns the objects as the API server stored them.
 * @throws {KubeApiError} naming the object that failed; objects before it stay applied.
 */
export async function serverSideApply(
  clients: KubeClients,
  objects: readonly KubeObject[],
  options: ServerSideApplyOptions,
): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const o of objects) {
    options.signal?.throwIfAborted();
    const applied = await kubeCall(`server-side apply of ${describeObject(o)} as ${options.fieldManager}`, () =>
      clients.rest.apply(o, { fieldManager: options.fieldManager, force: options.force ?? false }),
    );
    out.push(applied);
  }
  return out;
}

/** Reads one object (any kind) or returns undefined when it does not exist. */
export async function readObject(
  clients: KubeClients,
  ref: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>,
  signal?: AbortSignal,
): Promise<KubeObject | undefined> {
  const metadata = {
    name: ref.metadata.name,
    ...(ref.metadata.namespace ? { namespace: ref.metadata.namespace } : {}),
  };
  return kubeCall(`read ${describeObject(ref)}`, () =>
    clients.rest.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata }, signal),
  );
}
