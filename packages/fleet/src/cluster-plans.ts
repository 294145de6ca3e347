import { isAbsolute, resolve } from 'node:path';
import { type LoadedPlan, parseHandoffPlan } from '@baton/core';
import { ConfigError } from '@baton/errors';
import type { FleetCluster, LoadedFleet } from './fleet-file.js';

/** Where a cluster's operator kubeconfig comes from. */
export type KubeconfigSource =
  | { readonly kind: 'file'; readonly path: string; readonly context?: string }
  | {
      readonly kind: 'secret';
      readonly namespace: string;
      readonly name: string;
      readonly key: string;
      readonly context?: string;
    }
  /** A context of the operator's own kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config). */
  | { readonly kind: 'context'; readonly context: string }
  /** The operator's current context: only sensible for a fleet of one. */
  | { readonly kind: 'default' };

/** One cluster of the fleet, ready to hand off: its own plan and where its credential comes from. */
export interface FleetTarget {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly kubeconfig: KubeconfigSource;
  readonly loaded: LoadedPlan;
}

const PLACEHOLDER = /\{\{\s*([a-zA-Z0-9_.\-/]+)\s*\}\}/g;

/**
 * Renders every cluster's plan: the template with `{{name}}` and `{{labels.KEY}}` filled in, the cluster's
 * overrides deep-merged over it, and its cluster section; each is validated by core's plan schema. All clusters must
 * share one audit log (the fleet's events go to the same log, through one writer).
 * @throws {ConfigError} naming the fleet file, the cluster and the field.
 */
export function renderTargets(fleet: LoadedFleet): FleetTarget[] {
  const targets = fleet.fleet.clusters.map((c, i) => renderTarget(fleet, c, i));
  const first = targets[0]!.loaded.plan.audit;
  for (const t of targets) {
    const a = t.loaded.plan.audit;
    const differs =
      a.logPath !== first.logPath
        ? `${a.logPath} vs ${first.logPath}`
        : a.origin !== first.origin
          ? `origin ${a.origin} vs ${first.origin}`
          : JSON.stringify(a.signer) !== JSON.stringify(first.signer)
            ? `its signer is a ${a.signer.kind}, not the same ${first.signer.kind}`
            : undefined;
    if (differs) {
      throw new ConfigError(
        `${fleet.file}: cluster "${t.name}": audit differs from cluster "${targets[0]!.name}" (${differs}); a fleet records every handoff and its fleet events in one log: remove audit from the cluster's overrides`,
      );
    }
  }
  return targets;
}

function renderTarget(fleet: LoadedFleet, c: FleetCluster, i: number): FleetTarget {
  const where = `${fleet.file}: cluster "${c.name}" (clusters[${i}])`;
  const vars = (key: string, field: string): string => {
    if (key === 'name') return c.name;
    if (key.startsWith('labels.')) {
      const v = c.labels[key.slice('labels.'.length)];
      if (v !== undefined) return v;
      throw new ConfigError(
        `${where}: ${field}: {{${key}}} names a label the cluster does not have; add it to the cluster's labels or change the template`,
      );
    }
    throw new ConfigError(`${where}: ${field}: unknown placeholder {{${key}}}; use {{name}} or {{labels.KEY}}`);
  };
  const rendered = fill(fleet.template, vars, '') as Record<string, unknown>;
  const merged = deepMerge(rendered, c.overrides ?? {}) as Record<string, unknown>;
  const kubeconfigPath =
    c.kubeconfig === undefined
      ? undefined
      : isAbsolute(c.kubeconfig)
        ? c.kubeconfig
        : resolve(fleet.baseDir, c.kubeconfig);
  const input = {
    apiVersion: 'baton.dev/v1alpha1',
    kind: 'HandoffPlan',
    ...merged,
    cluster: {
      name: c.name,
      ...(kubeconfigPath ? { kubeconfig: kubeconfigPath } : {}),
      ...(c.context ? { context: c.context } : {}),
    },
  };
  const loaded = parseHandoffPlan(input, where, fleet.planBaseDir);
  return { name: c.name, labels: c.labels, kubeconfig: sourceOf(c, kubeconfigPath), loaded };
}

function sourceOf(c: FleetCluster, kubeconfigPath: string | undefined): KubeconfigSource {
  const ctx = c.context ? { context: c.context } : {};
  if (kubeconfigPath) return { kind: 'file', path: kubeconfigPath, ...ctx };
  if (c.secretRef) return { kind: 'secret', ...c.secretRef, ...ctx };
  if (c.context) return { kind: 'context', context: c.context };
  return { kind: 'default' };
}

/** Replaces placeholders in every string of a JSON-like value. */
function fill(value: unknown, vars: (key: string, field: string) => string, path: string): unknown {
  if (typeof value === 'string') return value.replace(PLACEHOLDER, (_, key: string) => vars(key, path || '(value)'));
  if (Array.isArray(value)) return value.map((v, i) => fill(v, vars, `${path}[${i}]`));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars, path ? `${path}.${k}` : k)]));
  return value;
}

/** Objects merge key by key; anything else (lists included) in `over` replaces `base`. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
