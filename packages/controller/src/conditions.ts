import type { Condition } from './gitsync.js';

/** A condition to write; {@link mergeConditions} gives it its transition time. */
export function condition(type: string, status: Condition['status'], reason: string, message: string): Condition {
  // The apiserver caps a condition message at 32 768 bytes; a longer one fails the whole status write.
  return { type, status, reason, message: message.slice(0, 32_000), lastTransitionTime: '' };
}

/** A time as Kubernetes writes `metav1.Time`: RFC 3339 in whole seconds, e.g. `2026-01-02T03:04:05Z`. */
export function kubeTime(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Options of {@link mergeConditions}. */
export interface MergeConditionsOptions {
  /** The transition time of a condition that is new or changed its status, as {@link kubeTime} writes it. */
  readonly now: string;
  /** `metadata.generation` of the object, recorded as `observedGeneration` on each updated condition. */
  readonly generation?: number | undefined;
}

/**
 * The conditions after an update, as `meta.SetStatusCondition` keeps them: one per type, sorted by type. An updated
 * condition keeps its previous `lastTransitionTime` while its status stays the same, and gets `options.now` when it
 * is new or its status changed; conditions of other types are kept as they were. Pure: neither input is changed.
 */
export function mergeConditions(
  previous: readonly Condition[],
  updates: readonly Condition[],
  options: MergeConditionsOptions,
): Condition[] {
  const kept = previous.filter((p) => !updates.some((u) => u.type === p.type)).map((p) => ({ ...p }));
  const updated = updates.map((u): Condition => {
    const old = previous.find((p) => p.type === u.type);
    return {
      ...u,
      lastTransitionTime: old && old.status === u.status ? old.lastTransitionTime : u.lastTransitionTime,
      ...(options.generation ? { observedGeneration: options.generation } : {}),
    };
  });
  const merged = [...kept, ...updated].sort((a, b) => a.type.localeCompare(b.type));
  for (const c of merged) if (!c.lastTransitionTime) c.lastTransitionTime = options.now;
  return merged;
}
