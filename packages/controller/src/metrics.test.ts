import { describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';

describe('Metrics', () => {
  it('renders Prometheus text with a summary, counters and gauges', () => {
    const m = new Metrics();
    m.observeSync(0.5, true, 10, 1);
    m.observeSync(0.25, false, 0, 0);
    m.observeError('ApplyFailed');
    m.setLeader(true);
    const text = m.render();
    expect(text).toContain('# TYPE baton_controller_sync_duration_seconds summary');
    expect(text).toContain('baton_controller_sync_duration_seconds_sum 0.75');
    expect(text).toContain('baton_controller_sync_duration_seconds_count 2');
    expect(text).toContain('baton_controller_syncs_total{result="failure"} 1');
    expect(text).toContain('baton_controller_objects_applied_total 10');
    expect(text).toContain('baton_controller_sync_errors_total{reason="ApplyFailed"} 1');
    expect(text).toContain('baton_controller_leader 1');
  });
});
