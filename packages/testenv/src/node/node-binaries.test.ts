import { describe, expect, it } from 'vitest';
import { defaultNodeKind, nodeVersionFor } from './node-binaries.js';

describe('defaultNodeKind', () => {
  it('is a real node where the bed builds that version of kubelet, kwok elsewhere and for a detached bed', () => {
    expect(nodeVersionFor('v1.36.3')).toBe('v1.36.3');
    expect(nodeVersionFor('v1.35.4')).toBeUndefined();
    expect(defaultNodeKind({ kubernetesVersion: '1.36.3' })).toBe('real');
    expect(defaultNodeKind({ kubernetesVersion: '1.35.4' })).toBe('kwok');
    expect(defaultNodeKind({ kubernetesVersion: '1.37' })).toBe('kwok');
  });
});
