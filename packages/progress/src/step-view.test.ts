import type { HandoffSummary } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { StepTracker } from './step-tracker.js';
import { createStepView } from './step-view.js';
import { captureStream as capture } from './testing.js';

const summary = {
  runId: 'r1',
  outcome: 'handed-off',
  cluster: { name: 'eu-1', server: 'https://127.0.0.1:6443' },
  revision: 'a'.repeat(40),
  readinessSeconds: 1.25,
  proof: {
    probeStatus: 401,
    tokenReviewAuthenticated: false,
    provedAt: '2026-01-01T00:00:12Z',
    proofWaitSeconds: 10.4,
  },
  audit: { index: 7 },
  leftoversRemoved: [],
  totalSeconds: 14,
  stepDurationsMs: { validate: 20, preflight: 30, push: 400, takeover: 1250, prove: 10400 },
} as unknown as HandoffSummary;

describe('step view', () => {
  it('tracks each step’s duration and key fact from onStep, log records and the summary', () => {
    const tracker = new StepTracker({ rules: 14, objects: 9 });
    tracker.enter('validate', 0);
    tracker.enter('push', 100);
    expect(tracker.steps[0]).toMatchObject({ step: 'validate', durationMs: 100, fact: '14 rules computed' });
    expect(tracker.current).toMatchObject({ step: 'push', fact: '9 objects' });
    tracker.enter('takeover', 400);
    tracker.observe({ msg: 'controller took over', readinessSeconds: 1.2 });
    tracker.enter('prove', 1600);
    tracker.observe({ msg: 'proved revocation', proofWaitSeconds: 10.4, probeStatus: 401 });
    expect(tracker.steps.map((s) => s.fact)).toEqual([
      '14 rules computed',
      '9 objects',
      'revision ? reached after 1.2 s',
      'first 401 after 10.4 s',
    ]);
    tracker.finish(summary, 11_600);
    expect(tracker.steps.map((s) => [s.step, s.durationMs, s.fact])).toEqual([
      ['validate', 20, '14 rules computed'],
      ['push', 400, '9 objects'],
      ['takeover', 1250, `revision ${'a'.repeat(12)} reached after 1.25 s`],
      ['prove', 10400, 'first 401 after 10.4 s; TokenReview authenticated=false'],
    ]);
  });

  it('prints one plain line per finished step when not a TTY', async () => {
    const c = capture();
    let t = 0;
    const view = createStepView({ out: c.out, facts: { rules: 3, objects: 2 }, nowMs: () => t });
    view.onStep('validate');
    t = 50;
    view.onStep('push');
    t = 450;
    view.onRecord({ msg: 'recorded handoff', auditIndex: 7 });
    await view.finish(summary);
    expect(c.text().split('\n')).toEqual([
      'validate         50 ms   3 rules computed',
      'push            400 ms   2 objects',
      '',
    ]);
  });
});
