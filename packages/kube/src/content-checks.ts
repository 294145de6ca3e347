// What a confinement pins of each planned object, as CEL checks on the admitted object: the whole content, or (for an
// object too large to pin inline) its security-relevant fields; a Secret's type and keys, never its values.

import { celHas, celLiteral, celSelect } from './cel-literal.js';
import type { KubeObject } from './kube-object.js';

// Above this many characters a literal is compared field by field, in validations of their own: each CEL expression
// has its own cost budget, and a mismatch then names the field.
const SPLIT_LITERAL_CHARS = 16_384;

export interface ContentCheck {
  readonly what: string;
  readonly expression: string;
}

// Fields the API server owns or that a write cannot set: never compared.
const SERVER_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** The checks that pin an object's content: metadata first, then each top-level field (split when large). */
export function contentChecks(expected: KubeObject): ContentCheck[] {
  const meta = expected.metadata as { labels?: object; annotations?: object; finalizers?: unknown[] };
  const checks: ContentCheck[] = [
    { what: 'metadata.labels', expression: mapEquals('object.metadata', 'labels', meta.labels) },
    { what: 'metadata.annotations', expression: mapEquals('object.metadata', 'annotations', meta.annotations) },
    {
      what: 'metadata.ownerReferences',
      expression: '!has(object.metadata.ownerReferences) || size(object.metadata.ownerReferences) == 0',
    },
    {
      what: 'metadata.finalizers',
      expression:
        meta.finalizers && meta.finalizers.length > 0
          ? `has(object.metadata.finalizers) && object.metadata.finalizers == ${celLiteral(meta.finalizers)}`
          : '!has(object.metadata.finalizers) || size(object.metadata.finalizers) == 0',
    },
  ];
  if (expected.kind === 'Secret') return [...checks, ...secretChecks(expected)];
  const keys = Object.keys(expected)
    .filter((k) => !SERVER_FIELDS.has(k) && expected[k] !== undefined)
    .sort();
  checks.push({
    what: 'the set of top-level fields',
    expression: `object.all(k, k in ${celLiteral([...SERVER_FIELDS, ...keys])})`,
  });
  if (isPinnedPartly(expected)) return [...checks, ...securityFieldChecks(expected)];
  for (const k of keys) {
    const allocated = SERVER_ALLOCATED[expected.kind]?.[k];
    if (allocated) checks.push(...allocatedFieldChecks(k, expected[k] as Record<string, unknown>, allocated));
    else checks.push(...equalityChecks('object', k, expected[k]));
  }
  return checks;
}

/**
 * Above this many bytes of JSON an object is pinned inline only by what decides its power (see
 * {@link SECURITY_FIELDS}); the post-close check (`checkPushedObjects`) compares the rest once the window is
 * closed. Argo CD's Application CRD (416 KB) would otherwise take the policy past etcd's request limit.
 */
export const INLINE_PIN_MAX_BYTES = 65_536;

/**
 * What is pinned inline of an object above {@link INLINE_PIN_MAX_BYTES}, by kind (besides its target, metadata and
 * top-level fields): a CRD's group, names, scope and conversion (what API it serves, and whether a webhook sees its
 * objects); a role's rules and aggregation; a binding's role and subjects. Other kinds: the first level of `spec`
 * by its keys, nothing deeper.
 */
const SECURITY_FIELDS: Readonly<Record<string, readonly string[]>> = {
  CustomResourceDefinition: ['spec.group', 'spec.names', 'spec.scope', 'spec.conversion'],
  ClusterRole: ['rules', 'aggregationRule'],
  Role: ['rules'],
  ClusterRoleBinding: ['roleRef', 'subjects'],
  RoleBinding: ['roleRef', 'subjects'],
};

/** Whether an object is too large to pin whole inline (a Secret never is: only its keys are pinned). */
export function isPinnedPartly(expected: KubeObject): boolean {
  return expected.kind !== 'Secret' && Buffer.byteLength(JSON.stringify(expected)) > INLINE_PIN_MAX_BYTES;
}

/** The inline checks of a partly pinned object: each security-relevant field equal, or absent when planned absent. */
function securityFieldChecks(expected: KubeObject): ContentCheck[] {
  const out: ContentCheck[] = [];
  for (const path of SECURITY_FIELDS[expected.kind] ?? []) {
    const parts = path.split('.');
    const key = parts.pop()!;
    const base = parts.reduce((b, p) => celSelect(b, p), 'object');
    const parent = parts.reduce<unknown>((o, p) => (o as Record<string, unknown> | undefined)?.[p], expected);
    const value = (parent as Record<string, unknown> | undefined)?.[key];
    const guard = parts.map((_, i) =>
      celHas(
        parts.slice(0, i).reduce((b, p) => celSelect(b, p), 'object'),
        parts[i]!,
      ),
    );
    if (value === undefined) {
      out.push({ what: path, expression: `!(${[...guard, celHas(base, key)].join(' && ')})` });
      continue;
    }
    for (const c of equalityChecks(base, key, value, path))
      out.push({ what: c.what, expression: [...guard, `(${c.expression})`].join(' && ') });
  }
  const spec = expected.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec === 'object')
    out.push({
      what: 'spec (fields)',
      expression: `has(object.spec) && object.spec.all(k, k in ${celLiteral(Object.keys(spec).filter((k) => spec[k] !== undefined))})`,
    });
  return out;
}

/**
 * Fields the API server fills in on create (before admission) that a plan cannot know, by kind and top-level field:
 * a Service's cluster IPs come from the allocator, so a dry run's answer differs from the real create. They may take
 * any address, but not `None` (a headless Service) unless the plan says so; a planned `None` is pinned.
 */
export const SERVER_ALLOCATED: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  Service: { spec: ['clusterIP', 'clusterIPs'] },
};

/** `object.<key>` field by field as expected, the allocated fields checked as {@link SERVER_ALLOCATED} says. */
function allocatedFieldChecks(
  key: string,
  value: Record<string, unknown>,
  allocated: readonly string[],
): ContentCheck[] {
  const sel = celSelect('object', key);
  const present = celHas('object', key);
  const isHeadless = value.clusterIP === 'None';
  const free = isHeadless ? [] : allocated;
  const fields = Object.keys(value).filter((k) => value[k] !== undefined && !free.includes(k));
  const out: ContentCheck[] = [
    { what: `${key} (fields)`, expression: `${present} && ${sel}.all(k, k in ${celLiteral([...fields, ...free])})` },
  ];
  for (const k of fields) {
    for (const c of equalityChecks(sel, k, value[k], `${key}.${k}`))
      out.push({ what: c.what, expression: `${present} && (${c.expression})` });
  }
  for (const k of free) {
    const f = celSelect(sel, k);
    const notNone = typeof value[k] === 'object' ? `!('None' in ${f})` : `${f} != 'None'`;
    out.push({
      what: `${key}.${k} (allocated, not None)`,
      expression: `!${present} || !${celHas(sel, k)} || ${notNone}`,
    });
  }
  return out;
}

// A Secret's values never enter the policy: its type, its keys, nothing write-only, and immutability as planned.
function secretChecks(expected: KubeObject): ContentCheck[] {
  const keys = Object.keys((expected.data as object | undefined) ?? {}).sort();
  const type = typeof expected.type === 'string' ? expected.type : 'Opaque';
  return [
    { what: 'type', expression: `has(object.type) && object.type == ${celLiteral(type)}` },
    {
      what: 'the set of keys',
      expression:
        keys.length === 0
          ? '!has(object.data) || size(object.data) == 0'
          : `has(object.data) && size(object.data) == ${keys.length} && ${celLiteral(keys)}.all(k, k in object.data)`,
    },
    { what: 'stringData', expression: '!has(object.stringData)' },
    {
      what: 'immutable',
      expression:
        expected.immutable === true
          ? 'has(object.immutable) && object.immutable == true'
          : '!has(object.immutable) || object.immutable == false',
    },
    {
      what: 'the set of top-level fields',
      expression: `object.all(k, k in ${celLiteral([...SERVER_FIELDS, 'type', 'data', 'immutable'])})`,
    },
  ];
}

function mapEquals(base: string, key: string, value: object | undefined): string {
  const sel = celSelect(base, key);
  return value && Object.keys(value).length > 0
    ? `${celHas(base, key)} && ${sel} == ${celLiteral(value)}`
    : `!${celHas(base, key)} || size(${sel}) == 0`;
}

/**
 * `base.key == value`, or, when the literal is large, the same equality one level down (each map key, or each list
 * element plus the list's size) so that no single expression holds a huge literal.
 */
function equalityChecks(base: string, key: string, value: unknown, path = key): ContentCheck[] {
  const sel = celSelect(base, key);
  const present = celHas(base, key);
  const literal = celLiteral(value);
  if (literal.length <= SPLIT_LITERAL_CHARS || value === null || typeof value !== 'object')
    return [{ what: path, expression: `${present} && ${sel} == ${literal}` }];
  if (Array.isArray(value)) {
    const out: ContentCheck[] = [
      { what: `${path} (length)`, expression: `${present} && size(${sel}) == ${value.length}` },
    ];
    value.forEach((v, i) => {
      const literalI = celLiteral(v);
      out.push({
        what: `${path}[${i}]`,
        expression: `${present} && size(${sel}) > ${i} && ${sel}[${i}] == ${literalI}`,
      });
    });
    return out;
  }
  const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined);
  const out: ContentCheck[] = [
    { what: `${path} (fields)`, expression: `${present} && ${sel}.all(k, k in ${celLiteral(keys)})` },
  ];
  for (const k of keys) {
    for (const c of equalityChecks(sel, k, (value as Record<string, unknown>)[k], `${path}.${k}`)) {
      out.push({ what: c.what, expression: `${present} && (${c.expression})` });
    }
  }
  return out;
}
