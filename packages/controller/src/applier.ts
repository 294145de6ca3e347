import { createHash } from 'node:crypto';
import { type Clock, pollUntil } from '@baton/core/clock';
import { BatonError, ErrorCode, TimeoutError } from '@baton/errors';
import { type KubeRestClient, type RestObject, statusOfError } from '@baton/kube/rest';
import type { Logger } from 'pino';
import { mapLimit } from './map-limit.js';
import { describeObject, isStageOneKind, objectId, parseObjectId, type RenderedObject } from './render.js';

/** The field manager every apply uses; SSA with force takes fields over from `baton-bootstrap`. */
export const FIELD_MANAGER = 'baton-controller';
/** The push's field manager, taken over on first apply. */
export const TAKEOVER_MANAGER = 'baton-bootstrap';
/** Annotation the controller stamps on every applied object: a hash of the object as rendered from Git. */
export const HASH_ANNOTATION = 'baton.dev/applied-hash';
/** Annotation that keeps an object when it disappears from Git: `baton.dev/prune: disabled`. */
export const PRUNE_ANNOTATION = 'baton.dev/prune';

/** A sync step failed; `reason` becomes the `Ready` condition's reason. */
export class SyncError extends BatonError {
  /** Condition reason, e.g. `ApplyFailed`. */
  readonly reason: string;
  /** True when retrying without a change in Git or in the cluster cannot help. */
  readonly isStalled: boolean;
  constructor(reason: string, message: string, options: { cause?: unknown; isStalled?: boolean } = {}) {
    super(ErrorCode.kubeApi, message, { cause: options.cause, details: { reason } });
    this.reason = reason;
    this.isStalled = options.isStalled ?? false;
  }
}

/** Objects the controller must never delete by accident: its own identity and permissions. */
export interface ProtectedIdentity {
  /** Namespace of the controller. */
  readonly namespace: string;
  /** Its ServiceAccount name. */
  readonly serviceAccount: string;
  /** Its Deployment name. */
  readonly deployment: string;
}

/** What one apply pass did. */
export interface ApplyResult {
  /** Inventory ids of every object in the revision. */
  readonly inventory: string[];
  /** Objects sent to the apiserver (the rest were unchanged and skipped). */
  readonly appliedCount: number;
  /** Objects that changed outside Git and were reverted. */
  readonly drifted: string[];
  /** Objects deleted because they left Git. */
  readonly pruned: string[];
  /** Objects that left Git but were kept: protected or opted out. */
  readonly pruneRefused: string[];
}

/** Dependencies of {@link Applier}. */
export interface ApplierDeps {
  readonly kube: KubeRestClient;
  readonly log: Logger;
  readonly clock: Clock;
  /** Parallel apiserver calls. @default 16 */
  readonly concurrency?: number;
  /** Field managers whose ownership is removed after apply. @default ['baton-bootstrap'] */
  readonly takeoverManagers?: readonly string[];
  /** How long to wait for a CRD to become Established. @default 30_000 */
  readonly crdTimeoutMs?: number;
}

/**
 * Applies a rendered revision: CRDs and Namespaces first (waiting for CRDs to be Established), a
 * server-side dry run of everything else, then server-side apply with force as `baton-controller`,
 * then prune. An object is only sent when it is missing, its content in Git changed (the
 * `baton.dev/applied-hash` annotation differs), a field Git sets was changed in the cluster, or
 * another manager still co-owns it: a no-op sync lists, it does not write, even after a restart.
 */
export class Applier {
  private readonly deps: ApplierDeps;

  constructor(deps: ApplierDeps) {
    this.deps = deps;
  }

  /**
   * Applies `objects` and prunes what is in `previousInventory` but not in `objects`.
   * @throws SyncError naming the file and object on the first failure; nothing in stage two is
   *   written when its dry run fails, and nothing is pruned after any failure.
   */
  async apply(
    objects: readonly RenderedObject[],
    options: { previousInventory: readonly string[]; prune: boolean; protect: ProtectedIdentity; signal?: AbortSignal },
  ): Promise<ApplyResult> {
    const { kube } = this.deps;
    const limit = this.deps.concurrency ?? 16;
    const seen = new Map<string, RenderedObject>();
    const stage1: RenderedObject[] = [];
    const stage2: RenderedObject[] = [];
    for (const r of objects) (isStageOneKind(r.object.kind) ? stage1 : stage2).push(r);

    const appliedRvs = new Map<string, string>();
    // Stage one: the kinds everything else may depend on.
    for (const r of stage1) {
      this.checkDuplicate(seen, r);
      stampHash(r.object);
    }
    const todo1 = await this.planChanges(stage1, options.signal);
    await this.applyAll(
      todo1.map((p) => p.r),
      false,
      limit,
      options.signal,
      appliedRvs,
    );
    const crds = stage1.filter((r) => r.object.kind === 'CustomResourceDefinition');
    await mapLimit(crds, limit, (r) => this.waitEstablished(r, options.signal));
    if (crds.length) kube.forgetDiscovery();

    // Namespaced objects without a namespace go to `default`, as kubectl does.
    for (const r of stage2) {
      let info: Awaited<ReturnType<KubeRestClient['resource']>>;
      try {
        info = await kube.resource(r.object.apiVersion, r.object.kind);
      } catch (err) {
        throw new SyncError('ApplyFailed', `${where(r)}: ${(err as Error).message}`, { cause: err });
      }
      if (info.namespaced && !r.object.metadata.namespace) r.object.metadata.namespace = 'default';
      if (!info.namespaced && r.object.metadata.namespace) delete r.object.metadata.namespace;
      this.checkDuplicate(seen, r);
      stampHash(r.object);
    }
    const todo2 = await this.planChanges(stage2, options.signal);
    await this.applyAll(
      todo2.map((p) => p.r),
      true,
      limit,
      options.signal,
    );
    await this.applyAll(
      todo2.map((p) => p.r),
      false,
      limit,
      options.signal,
      appliedRvs,
    );

    const drifted: string[] = [];
    for (const p of [...todo1, ...todo2]) {
      // Same revision as live, but a field Git sets had changed, and our apply changed it back.
      if (p.isDriftCandidate && p.liveRv !== appliedRvs.get(p.id)) drifted.push(p.id);
    }

    const inventory = [...seen.keys()];
    const { pruned, refused } = options.prune
      ? await this.prune(options.previousInventory, new Set(inventory), options.protect, options.signal)
      : { pruned: [], refused: [] };
    return {
      inventory: [...inventory, ...refused.filter((id) => !seen.has(id))],
      appliedCount: todo1.length + todo2.length,
      drifted,
      pruned,
      pruneRefused: refused,
    };
  }

  private checkDuplicate(seen: Map<string, RenderedObject>, r: RenderedObject) {
    const id = objectId(r.object);
    const prev = seen.get(id);
    if (prev)
      throw new SyncError(
        'RenderFailed',
        `${where(r)}: ${describeObject(r.object)} is also defined in ${prev.source.file} (document ${prev.source.doc}); keep one definition`,
        { isStalled: true },
      );
    seen.set(id, r);
  }

  // Lists live objects once per (apiVersion, kind, namespace) and keeps those that need an apply:
  // missing, changed in Git (hash annotation differs), changed in the cluster in a field Git sets,
  // or not yet owned by baton-controller alone. Status-only changes are not a reason to write.
  private async planChanges(rs: readonly RenderedObject[], signal?: AbortSignal) {
    const groups = new Map<string, RenderedObject[]>();
    for (const r of rs) {
      const k = `${r.object.apiVersion}\n${r.object.kind}\n${r.object.metadata.namespace ?? ''}`;
      const g = groups.get(k);
      if (g) g.push(r);
      else groups.set(k, [r]);
    }
    const live = new Map<string, RestObject>();
    await mapLimit([...groups.values()], 4, async (g) => {
      const o = g[0]!.object;
      try {
        const path = await this.deps.kube.collectionPath(o.apiVersion, o.kind, o.metadata.namespace);
        const list = await this.deps.kube.call<{ items: RestObject[] }>('GET', path, undefined, undefined, signal);
        for (const item of list.items)
          live.set(`${o.apiVersion}/${o.kind}/${item.metadata.namespace ?? ''}/${item.metadata.name}`, item);
      } catch {
        // Unlistable or unknown kind: treat as changed, the dry run reports the real error.
      }
    });
    const managers = this.deps.takeoverManagers ?? [TAKEOVER_MANAGER];
    const out: { r: RenderedObject; id: string; liveRv: string | undefined; isDriftCandidate: boolean }[] = [];
    for (const r of rs) {
      const id = objectId(r.object);
      const hash = r.object.metadata.annotations?.[HASH_ANNOTATION];
      const l = live.get(id);
      const isSameRevision = l !== undefined && l.metadata.annotations?.[HASH_ANNOTATION] === hash;
      const isOwned = l !== undefined && isOwnedSolelyBy(l, managers);
      if (isSameRevision && isOwned && isSubset(withoutStatus(r.object), l)) continue;
      out.push({ r, id, liveRv: l?.metadata.resourceVersion, isDriftCandidate: isSameRevision && isOwned });
    }
    return out;
  }

  private async applyAll(
    rs: readonly RenderedObject[],
    dryRun: boolean,
    limit: number,
    signal?: AbortSignal,
    appliedRvs?: Map<string, string>,
  ) {
    const failures: string[] = [];
    let firstCause: unknown;
    await mapLimit(rs, limit, async (r) => {
      try {
        let res = await this.deps.kube.apply(r.object, {
          fieldManager: FIELD_MANAGER,
          force: true,
          dryRun,
          ...(signal ? { signal } : {}),
        });
        if (!dryRun) {
          res = await this.dropTakeoverManagers(res, signal);
          appliedRvs?.set(objectId(r.object), res.metadata.resourceVersion ?? '');
        }
      } catch (err) {
        signal?.throwIfAborted();
        firstCause ??= err;
        const status = statusOfError(err);
        const why =
          status === 403
            ? 'forbidden: the controller may not manage this object; remove it from Git or widen the controller ClusterRole (see bootstrap-manifests/baton-controller/README.md)'
            : (err as Error).message;
        failures.push(`${where(r)}: ${describeObject(r.object)}: ${why}`);
      }
    });
    if (failures.length) {
      failures.sort();
      const more = failures.length > 3 ? ` (and ${failures.length - 3} more)` : '';
      throw new SyncError(
        dryRun ? 'ValidationFailed' : 'ApplyFailed',
        `${dryRun ? 'dry run' : 'apply'} failed, nothing of this revision beyond CRDs and Namespaces was written: ${failures.slice(0, 3).join('; ')}${more}`,
        { cause: firstCause },
      );
    }
  }

  // SSA with force only moves fields whose values conflict; where the push and Git agree, the
  // bootstrap manager would stay a co-owner for ever. Removing its managedFields entries (as Flux
  // does for kubectl) leaves baton-controller the sole owner, which is what the handoff proves.
  private async dropTakeoverManagers(obj: RestObject, signal?: AbortSignal): Promise<RestObject> {
    const managers = this.deps.takeoverManagers ?? [TAKEOVER_MANAGER];
    const fields = obj.metadata.managedFields ?? [];
    const keep = fields.filter((f) => !managers.includes(f.manager ?? ''));
    if (keep.length === fields.length || keep.length === 0) return obj;
    const patch = [
      { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
      { op: 'replace', path: '/metadata/managedFields', value: keep },
    ];
    return this.deps.kube.call(
      'PATCH',
      await this.deps.kube.objectPath(obj),
      patch,
      'application/json-patch+json',
      signal,
    );
  }

  private async waitEstablished(r: RenderedObject, signal?: AbortSignal) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${r.object.metadata.name}`;
    const timeoutMs = this.deps.crdTimeoutMs ?? 30_000;
    try {
      await pollUntil(
        async () => {
          const crd = await this.deps.kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
            path,
            signal,
          );
          return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') || undefined;
        },
        { clock: this.deps.clock, intervalMs: 200, timeoutMs, what: 'CRD Established', ...(signal ? { signal } : {}) },
      );
    } catch (err) {
      if (!(err instanceof TimeoutError)) throw err;
      throw new SyncError(
        'ApplyFailed',
        `${where(r)}: CustomResourceDefinition ${r.object.metadata.name} is not Established after ${timeoutMs / 1000} s; check its conditions (kubectl describe crd)`,
      );
    }
  }

  private async prune(
    previous: readonly string[],
    keep: ReadonlySet<string>,
    protect: ProtectedIdentity,
    signal?: AbortSignal,
  ) {
    const pruned: string[] = [];
    const refused: string[] = [];
    const gone = previous.filter((id) => !keep.has(id));
    await mapLimit(gone, 8, async (id) => {
      const ref = parseObjectId(id);
      if (isProtected(ref, protect)) {
        refused.push(id);
        this.deps.log.warn({ object: id }, 'refusing to prune the controller identity or RBAC');
        return;
      }
      try {
        const path = `${await this.deps.kube.collectionPath(ref.apiVersion, ref.kind, ref.namespace)}/${encodeURIComponent(ref.name)}`;
        const live = await this.deps.kube.get(path, signal);
        if (!live) return;
        if (live.metadata.annotations?.[PRUNE_ANNOTATION] === 'disabled') return;
        const res = await this.deps.kube.raw(
          'DELETE',
          path,
          { propagationPolicy: 'Background' },
          'application/json',
          signal,
        );
        if (res.status >= 300 && res.status !== 404)
          throw new SyncError('PruneFailed', `prune ${id} returned ${res.status}`);
        pruned.push(id);
      } catch (err) {
        signal?.throwIfAborted();
        // The kind is gone (its CRD was removed): nothing is left to prune.
        if (statusOfError(err) === 404) return;
        throw new SyncError(
          'PruneFailed',
          `prune ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} failed: ${(err as Error).message}; delete it by hand or annotate it ${PRUNE_ANNOTATION}=disabled`,
          { cause: err },
        );
      }
    });
    return { pruned: pruned.sort(), refused: refused.sort() };
  }
}

/** True for objects the controller never prunes: its Namespace, ServiceAccount, Deployment, the GitSync CRD, and RBAC named for it. */
export function isProtected(
  ref: { kind: string; namespace: string | undefined; name: string },
  p: ProtectedIdentity,
): boolean {
  if (ref.kind === 'Namespace' && ref.name === p.namespace) return true;
  if (ref.kind === 'ServiceAccount' && ref.namespace === p.namespace && ref.name === p.serviceAccount) return true;
  if (ref.kind === 'Deployment' && ref.namespace === p.namespace && ref.name === p.deployment) return true;
  if (ref.kind === 'CustomResourceDefinition' && ref.name === 'gitsyncs.baton.dev') return true;
  if (
    ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(ref.kind) &&
    (ref.name.startsWith(p.deployment) || ref.namespace === p.namespace)
  )
    return true;
  return false;
}

function where(r: RenderedObject): string {
  return `${r.source.file} (document ${r.source.doc})`;
}

function stampHash(o: RestObject): void {
  const hash = createHash('sha256').update(JSON.stringify(o)).digest('hex').slice(0, 32);
  o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [HASH_ANNOTATION]: hash };
}

// List items carry no apiVersion/kind, and status is not ours to compare.
function withoutStatus(o: RestObject): Record<string, unknown> {
  const { status: _status, apiVersion: _apiVersion, kind: _kind, ...rest } = o;
  return rest;
}

/** True when `live` has an Apply entry of baton-controller and none of the managers being taken over. */
function isOwnedSolelyBy(live: RestObject, takeover: readonly string[]): boolean {
  const fields = live.metadata.managedFields ?? [];
  return (
    fields.some((f) => f.manager === FIELD_MANAGER && f.operation === 'Apply') &&
    !fields.some((f) => takeover.includes(f.manager ?? ''))
  );
}

/**
 * True when every field of `want` has the same value in `have` (extra fields in `have`, from
 * defaulting or other managers, are fine; arrays must have the same length).
 */
export function isSubset(want: unknown, have: unknown): boolean {
  if (want === null || typeof want !== 'object') return want === have;
  if (Array.isArray(want))
    return Array.isArray(have) && want.length === have.length && want.every((w, i) => isSubset(w, have[i]));
  if (typeof have !== 'object' || have === null || Array.isArray(have)) return false;
  return Object.entries(want).every(([k, v]) => isSubset(v, (have as Record<string, unknown>)[k]));
}
