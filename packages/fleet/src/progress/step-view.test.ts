import type { HandoffSummary } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { createFleetView } from './fleet-view.js';
import { StepTracker } from './step-tracker.js';
import { createStepView } from './step-view.js';

/** A stream that keeps what is written, and is not a TTY. */
function capture() {
  const chunks: string[] = [];
  const out = {
    isTTY: false,
    write: (c: string) => {
      chunks.push(c);
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { out, text: () => chunks.join('') };
}

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

  it('shows a fleet wave by wave with the budget, each cluster’s steps and outcome', () => {
    const c = capture();
    const view = createFleetView({
      out: c.out,
      waves: [{ index: 0, name: 'canary', clusters: [{ name: 'a' }] }],
      budget: 2,
      nowMs: () => 0,
    });
    view.onEvent({ type: 'wave-started', wave: 0, name: 'canary', clusters: ['a'] });
    view.onStep('a', 'validate');
    view.onStep('a', 'push');
    view.onEvent({
      type: 'cluster-finished',
      wave: 0,
      result: {
        name: 'a',
        wave: 0,
        status: 'failed',
        attempts: 2,
        durationMs: 3000,
        failedStep: 'push',
        error: 'denied',
      },
    });
    view.onEvent({ type: 'wave-finished', wave: 0, name: 'canary', budget: { allowed: 2, failed: 1 } });
    expect(c.text()).toBe(
      [
        'wave 1/1 canary: 1 cluster(s); failed 0 of budget 2',
        '  [a] validate          0 ms',
        '  [a] push              0 ms',
        'a failed at push: denied (3.0 s after 2 attempts)',
        'wave 1/1 canary finished; failed 1 of budget 2',
        '',
      ].join('\n'),
    );
  });
});
