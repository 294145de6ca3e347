import type { ConfinedObject } from './confinement-policy.js';
import type { KubeClients } from './kube-clients.js';
import { kubeCall } from './kube-error.js';
import { describeObject, INSTALL_KINDS, type KindInfo, type KubeObject, kindsFromCrds } from './kube-object.js';

/** Options of {@link expectedObjects}. */
export interface ExpectedObjectsOptions {
  /** The field manager the push applies with. */
  readonly fieldManager: string;
  /** Whether the push takes the fields from other managers (a repair does: someone rewrote them). @default false */
  readonly force?: boolean;
  /**
   * The validated set `objects` were narrowed from (a run that pushes only what the controller does not own yet, a
   * repair): a custom object whose CRD it holds but `objects` does not is of a kind served already, and is dry-run
   * like a built-in. @default objects
   */
  readonly wholeSet?: readonly KubeObject[];
  readonly signal?: AbortSignal;
}

/**
 * What each object of the set will hold once the push has applied it, to pin its content in the confinement:
 * - a built-in kind: the API server's answer to a dry-run server-side apply by the operator (nothing is stored), so
 *   its defaults (a Deployment's strategy, a container's pull policy, …) are the server's own, whatever its version;
 * - a kind defined by a CRD of the set (not served before the push): the manifest with the schema defaults of that
 *   CRD as the API server answered its dry run (so defaults the server would drop are not assumed).
 * Server-owned metadata and `status` are dropped; Secret values never leave this function's caller's memory
 * (the confinement uses a Secret's type and keys only).
 * @throws {KubeApiError} naming the object the API server refused (a conflict or an invalid object fails here, before
 * any credential exists).
 */
export async function expectedObjects(
  operator: KubeClients,
  objects: readonly KubeObject[],
  options: ExpectedObjectsOptions,
): Promise<ConfinedObject[]> {
  const pushedCrdKinds = kindsFromCrds(objects);
  const custom = { ...kindsFromCrds(options.wholeSet ?? []), ...pushedCrdKinds };
  const stored = new Map<KubeObject, KubeObject>();
  // Built-in kinds first (CRDs among them), so a custom object is defaulted by its CRD as the server stores it; then
  // the objects of kinds served already (their CRD is not pushed), as the server answers for them.
  const servedAlready = (x: KubeObject) => !INSTALL_KINDS[x.kind] && !pushedCrdKinds[x.kind] && !!custom[x.kind];
  for (const o of [...objects.filter((x) => INSTALL_KINDS[x.kind]), ...objects.filter(servedAlready)]) {
    options.signal?.throwIfAborted();
    const answer = await kubeCall(`dry-run server-side apply of ${describeObject(o)}`, () =>
      operator.rest.apply(o, { fieldManager: options.fieldManager, dryRun: true, force: options.force ?? false }),
    );
    stored.set(o, answer);
  }
  const crds = objects.filter((x) => x.kind === 'CustomResourceDefinition').map((x) => stored.get(x)!);
  return objects.map((o) => {
    const info: KindInfo | undefined = INSTALL_KINDS[o.kind] ?? custom[o.kind];
    if (!info) throw new Error(`expectedObjects: kind ${o.kind} is not an install kind; validate the set first`);
    const expected = stored.get(o) ?? withSchemaDefaults(o, crdSchema(crds, o));
    return { group: info.group, resource: info.resource, expected: writableView(expected) };
  });
}

/** The object without server-owned metadata and status: what a write can set. */
export function writableView(o: KubeObject): KubeObject {
  const { status: _status, ...rest } = o as KubeObject & { status?: unknown };
  const m = o.metadata as Record<string, unknown>;
  const metadata: Record<string, unknown> = { name: m.name };
  for (const k of ['namespace', 'labels', 'annotations', 'finalizers']) if (m[k] !== undefined) metadata[k] = m[k];
  return { ...rest, metadata: metadata as KubeObject['metadata'] };
}

type Schema = {
  type?: string;
  default?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
};

function crdSchema(objects: readonly KubeObject[], o: KubeObject): Schema | undefined {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
  for (const crd of objects) {
    if (crd.kind !== 'CustomResourceDefinition') continue;
    const spec = crd.spec as {
      group?: string;
      names?: { kind?: string };
      versions?: { name?: string; schema?: { openAPIV3Schema?: Schema } }[];
    };
    if (spec.group !== group || spec.names?.kind !== o.kind) continue;
    return spec.versions?.find((v) => v.name === version)?.schema?.openAPIV3Schema;
  }
  return undefined;
}

/**
 * Applies structural-schema defaults as the API server does for custom resources: a property absent from an object
 * gets its `default`, then defaulting descends into present properties, list items and additional properties.
 */
export function withSchemaDefaults<T>(value: T, schema: Schema | undefined): T {
  if (!schema || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => withSchemaDefaults(v, schema.items)) as T;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [k, s] of Object.entries(schema.properties ?? {})) {
    if (out[k] === undefined && s.default !== undefined) out[k] = structuredClone(s.default);
    if (out[k] !== undefined) out[k] = withSchemaDefaults(out[k], s);
  }
  if (typeof schema.additionalProperties === 'object') {
    for (const k of Object.keys(out)) {
      if (!schema.properties?.[k]) out[k] = withSchemaDefaults(out[k], schema.additionalProperties);
    }
  }
  return out as T;
}
