import { type KubeClients, type KubeObject, kindsFromCrds, readObject, serverSideApply } from '@baton/kube';
import { type Clock, pollUntil } from './clock.js';

/** Options of {@link pushManifests}. */
export interface PushOptions {
  readonly fieldManager: string;
  /** Take the fields from other managers (a repair pushes over a rewrite). @default false */
  readonly force?: boolean;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  /** How long a CRD of the set may take to become Established, in ms. @default 60000 */
  readonly crdTimeoutMs?: number;
}

/**
 * Server-side-applies the manifest set in order with the bootstrap credential. Before the first object of a kind
 * that a CRD of the set defines, waits (with the same credential: it may `get` that CRD by name) until the CRD is
 * Established and discovery serves the kind.
 * @throws {KubeApiError} naming the object that failed. @throws {TimeoutError} when a CRD is never Established.
 */
export async function pushManifests(
  bootstrap: KubeClients,
  objects: readonly KubeObject[],
  options: PushOptions,
): Promise<void> {
  const custom = kindsFromCrds(objects);
  const crdOf = new Map(
    objects
      .filter((o) => o.kind === 'CustomResourceDefinition')
      .map((o) => [String((o.spec as { names?: { kind?: string } })?.names?.kind), o]),
  );
  const established = new Set<string>();
  for (const o of objects) {
    const crd = custom[o.kind] ? crdOf.get(o.kind) : undefined;
    if (crd && !established.has(o.kind)) {
      await pollUntil(
        async () => {
          const live = await readObject(bootstrap, crd);
          const conditions =
            (live?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
          if (!conditions.some((c) => c.type === 'Established' && c.status === 'True')) return undefined;
          // Discovery of a new group can lag Established by a moment: the apply needs the kind's REST mapping.
          return bootstrap.rest.resource(o.apiVersion, o.kind).then(
            () => true,
            () => undefined,
          );
        },
        {
          clock: options.clock,
          intervalMs: 200,
          timeoutMs: options.crdTimeoutMs ?? 60_000,
          what: `CustomResourceDefinition ${crd.metadata.name} Established`,
          signal: options.signal,
        },
      );
      established.add(o.kind);
    }
    await serverSideApply(bootstrap, [o], {
      fieldManager: options.fieldManager,
      force: options.force ?? false,
      signal: options.signal,
    });
  }
}
