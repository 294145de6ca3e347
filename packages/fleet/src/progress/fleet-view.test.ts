import { captureStream as capture } from '@baton/progress/testing';
import { describe, expect, it } from 'vitest';
import { createFleetView } from './fleet-view.js';

describe('fleet view', () => {
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
