import { describe, expect, it } from 'vitest';
import { KUBERNETES_VERSIONS } from '../control-plane-binaries.js';
import { nodeVersionFor } from './node-binaries.js';

describe('nodeVersionFor', () => {
  it('gives every Kubernetes version the bed builds a node of its own version', () => {
    for (const v of KUBERNETES_VERSIONS) expect(nodeVersionFor(v)).toBe(v);
  });

  it('has no node for a version the bed does not build', () => {
    expect(nodeVersionFor('v1.33.0')).toBeUndefined();
  });
});
