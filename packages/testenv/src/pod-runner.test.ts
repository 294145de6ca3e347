import { describe, expect, it } from 'vitest';
import { expandVars } from './pod-runner.js';

describe('expandVars (the kubelet’s $(VAR) expansion of container args)', () => {
  const env = { RUNTIME_NAMESPACE: 'flux-system', POD_NAME: 'p-1' };

  it('expands known variables, keeps unknown ones as written', () => {
    expect(expandVars('--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.', env)).toBe(
      '--storage-adv-addr=source-controller.flux-system.svc.cluster.local.',
    );
    expect(expandVars('$(POD_NAME)/$(MISSING)', env)).toBe('p-1/$(MISSING)');
  });

  it('treats $$ as an escaped dollar', () => {
    expect(expandVars('$$(RUNTIME_NAMESPACE) costs $$5', env)).toBe('$(RUNTIME_NAMESPACE) costs $5');
  });
});
