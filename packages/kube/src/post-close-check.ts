import { createHash } from 'node:crypto';
import { type ConfinedObject, SERVER_ALLOCATED } from './confinement-policy.js';
import type { KubeClients } from './kube-clients.js';
import { describeObject, type KubeObject } from './kube-object.js';
import { readObject } from './server-side-apply.js';

/** One pushed object that differs from the plan. */
export interface PushedObjectMismatch {
  /** `Kind/namespace/name`. */
  readonly object: string;
  /**
   * The differing fields, as paths (`spec.replicas`, `metadata.labels.app`, `data[password]`); `absent` when the
   * object is gone. Never a value: a Secret's keys are named, its values are not.
   */
  readonly fields: readonly string[];
}

/** What {@link checkPushedObjects} found. */
export interface PushedObjectsCheck {
  /** How many objects were read and compared. */
  readonly checked: number;
  readonly mismatches: readonly PushedObjectMismatch[];
}

/** Options of {@link checkPushedObjects}. */
export interface CheckPushedObjectsOptions {
  readonly signal?: AbortSignal;
}

/**
 * The post-close check: reads every pushed object with `reader` (the operator's credential, once the bootstrap
 * identity can neither write nor read) and compares it with what the plan declared (`objects`, as
 * {@link expectedObjects} computed them), so what admission could not pin is verified after the fact:
 * - a Secret by its type, `immutable`, its set of keys and a SHA-256 of each value, computed in memory, compared and
 *   dropped (never returned, logged or written: a hash of a short password can be guessed offline);
 * - any other object by every field the plan declares (labels and annotations that controllers add, such as a
 *   Deployment's revision, are not the plan's and are ignored; the fields in {@link SERVER_ALLOCATED} are the
 *   allocator's).
 * Every object is compared in full, so a confinement may pin a large object only partially inline (Argo CD's
 * Application CRD is 416 KB) and rely on this check for the rest.
 * @throws {KubeApiError} when an object cannot be read (a 404 is a mismatch, not an error).
 */
export async function checkPushedObjects(
  reader: KubeClients,
  objects: readonly ConfinedObject[],
  options: CheckPushedObjectsOptions = {},
): Promise<PushedObjectsCheck> {
  const mismatches: PushedObjectMismatch[] = [];
  // In parallel: the check sits between the close and the takeover, and each read is one short GET.
  const lives = await Promise.all(
    objects.map((o) => {
      options.signal?.throwIfAborted();
      return readObject(reader, o.expected, options.signal);
    }),
  );
  objects.forEach((o, i) => {
    const fields = diffFromPlan(o.expected, lives[i]);
    if (fields.length > 0) mismatches.push({ object: describeObject(o.expected), fields });
  });
  return { checked: objects.length, mismatches };
}

/**
 * The fields of `live` that differ from `expected` (see {@link checkPushedObjects}), as paths; `['absent']` when
 * `live` is undefined. Pure.
 */
export function diffFromPlan(expected: KubeObject, live: KubeObject | undefined): string[] {
  if (!live) return ['absent'];
  const out: string[] = [];
  const em = expected.metadata as { labels?: unknown; annotations?: unknown; finalizers?: unknown };
  const lm = live.metadata as Record<string, unknown>;
  for (const k of ['labels', 'annotations', 'finalizers'] as const) {
    if (em[k] !== undefined) diffValue(em[k], lm[k], `metadata.${k}`, out);
  }
  if (expected.kind === 'Secret') return [...out, ...diffSecret(expected, live)];
  const allocated = SERVER_ALLOCATED[expected.kind] ?? {};
  for (const k of Object.keys(expected).sort()) {
    if (SKIPPED.has(k) || expected[k] === undefined) continue;
    // A planned headless Service (`clusterIP: None`) is pinned like any field.
    const isHeadless = (expected[k] as { clusterIP?: unknown } | null)?.clusterIP === 'None';
    const free = isHeadless ? undefined : allocated[k];
    const value = free ? withoutKeys(expected[k], free) : expected[k];
    const held = free ? withoutKeys(live[k], free) : live[k];
    diffValue(value, held, k, out);
  }
  return out;
}

const SKIPPED = new Set(['apiVersion', 'kind', 'metadata', 'status']);

function diffSecret(expected: KubeObject, live: KubeObject): string[] {
  const out: string[] = [];
  if ((expected.type ?? 'Opaque') !== (live.type ?? 'Opaque')) out.push('type');
  if ((expected.immutable ?? false) !== (live.immutable ?? false)) out.push('immutable');
  const want = valueDigests(expected.data);
  const held = valueDigests(live.data);
  for (const key of [...new Set([...want.keys(), ...held.keys()])].sort()) {
    if (want.get(key) !== held.get(key)) out.push(`data[${key}]`);
  }
  return out;
}

// SHA-256 per key of the base64 value as the API server returns it: the values never leave this function's caller.
function valueDigests(data: unknown): Map<string, string> {
  const m = new Map<string, string>();
  for (const [k, v] of Object.entries((data as Record<string, unknown> | undefined) ?? {})) {
    m.set(k, createHash('sha256').update(String(v)).digest('hex'));
  }
  return m;
}

// Objects: each declared key must match (extra keys on the server are its defaults or other managers'); arrays:
// the same length, element by element; anything else: equal.
function diffValue(want: unknown, held: unknown, path: string, out: string[]): void {
  if (Array.isArray(want)) {
    if (!Array.isArray(held) || held.length !== want.length) {
      out.push(path);
      return;
    }
    want.forEach((w, i) => {
      diffValue(w, held[i], `${path}[${i}]`, out);
    });
    return;
  }
  if (want !== null && typeof want === 'object') {
    if (held === null || typeof held !== 'object' || Array.isArray(held)) {
      out.push(path);
      return;
    }
    for (const k of Object.keys(want).sort()) {
      const w = (want as Record<string, unknown>)[k];
      if (w !== undefined) diffValue(w, (held as Record<string, unknown>)[k], `${path}.${k}`, out);
    }
    return;
  }
  if (want !== held) out.push(path);
}

function withoutKeys(v: unknown, keys: readonly string[]): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const copy: Record<string, unknown> = { ...(v as Record<string, unknown>) };
  for (const k of keys) delete copy[k];
  return copy;
}
