import { describe, expect, it } from 'vitest';
import { condition, kubeTime, mergeConditions } from './conditions.js';
import type { Condition } from './gitsync.js';

const earlier = '2026-01-01T00:00:00Z';
const now = '2026-01-02T03:04:05Z';

function stored(type: string, status: Condition['status'], reason = 'Old'): Condition {
  return { type, status, reason, message: `${type} was ${status}`, lastTransitionTime: earlier, observedGeneration: 1 };
}

describe('mergeConditions', () => {
  it('keeps the transition time while the status stays, and moves it when the status changes', () => {
    const previous = [stored('Ready', 'True'), stored('Stalled', 'False')];
    const merged = mergeConditions(
      previous,
      [condition('Ready', 'True', 'Succeeded', 'applied'), condition('Stalled', 'True', 'InvalidSpec', 'bad url')],
      { now, generation: 2 },
    );
    expect(merged).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Succeeded',
        message: 'applied',
        lastTransitionTime: earlier,
        observedGeneration: 2,
      },
      {
        type: 'Stalled',
        status: 'True',
        reason: 'InvalidSpec',
        message: 'bad url',
        lastTransitionTime: now,
        observedGeneration: 2,
      },
    ]);
  });

  it('adds new types with the current time, keeps other types untouched, one per type, sorted by type', () => {
    const previous = [stored('Stalled', 'False'), stored('Ready', 'False')];
    const merged = mergeConditions(previous, [condition('Reconciling', 'True', 'Progressing', 'applying abc')], {
      now,
    });
    expect(merged.map((c) => c.type)).toEqual(['Ready', 'Reconciling', 'Stalled']);
    expect(merged[0]).toEqual(previous[1]);
    expect(merged[2]).toEqual(previous[0]);
    expect(merged[1]).toEqual({
      type: 'Reconciling',
      status: 'True',
      reason: 'Progressing',
      message: 'applying abc',
      lastTransitionTime: now,
    });
  });

  it('changes neither input', () => {
    const previous = [stored('Ready', 'True')];
    const updates = [condition('Ready', 'False', 'ApplyFailed', 'forbidden')];
    const before = structuredClone({ previous, updates });
    const merged = mergeConditions(previous, updates, { now, generation: 3 });
    expect({ previous, updates }).toEqual(before);
    expect(merged[0]).not.toBe(updates[0]);
  });

  it('gives a stored condition without a transition time the current time', () => {
    const merged = mergeConditions([{ ...stored('Ready', 'True'), lastTransitionTime: '' }], [], { now });
    expect(merged[0]?.lastTransitionTime).toBe(now);
  });
});

describe('condition', () => {
  it('caps the message below the apiserver limit for a condition message', () => {
    expect(condition('Ready', 'False', 'X', 'm'.repeat(40_000)).message).toHaveLength(32_000);
  });
});

describe('kubeTime', () => {
  it('writes whole seconds in UTC, as metav1.Time', () => {
    expect(kubeTime(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02T03:04:05Z');
  });
});
