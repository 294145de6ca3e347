import type { KubeClients } from '@baton/kube';
import type { Clock } from '../clock.js';
import { createSettlingFakeClock } from '../fake-clock.js';
import { silentLogger } from '../logger.js';
import type { HandoffDeps } from './types.js';

/**
 * Collaborators of a unit test's handoff run: `operator` (scripted by the test), a fake clock (settling by default),
 * a silent logger, run id `r1`, an audit sink that must not be reached, and `extra` over them.
 */
export function fakeHandoffDeps(
  operator: Partial<KubeClients>,
  extra: Partial<HandoffDeps> = {},
  clock: Clock = createSettlingFakeClock(),
): HandoffDeps {
  return {
    operator: { server: 'https://127.0.0.1:1', ...operator } as KubeClients,
    clock,
    log: silentLogger(),
    audit: { check: async () => undefined, append: async () => Promise.reject(new Error('not used')) },
    actor: { user: 't', host: 'h', pid: 1, via: 'cli' },
    newRunId: () => 'r1',
    isPidAlive: () => true,
    resolveRevision: async () => 'a'.repeat(40),
    ...extra,
  };
}
