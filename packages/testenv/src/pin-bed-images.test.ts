import { describe, expect, it } from 'vitest';
import { pinBedImages } from './pin-bed-images.js';

describe('pinBedImages', () => {
  it("replaces upstream's pin of each image with the bed's, and leaves other images alone", () => {
    const text = [
      '          image: ghcr.io/fluxcd/source-controller:v1.9.6@sha256:6a66',
      '          image: ghcr.io/fluxcd/kustomize-controller:v1.9.6',
      '          image: ghcr.io/fluxcd/source-controller-extra:v1',
      '          image: docker.io/library/redis:7',
    ].join('\n');
    const out = pinBedImages(text, {
      'ghcr.io/fluxcd/source-controller': 'ghcr.io/fluxcd/source-controller:v1.9.6@sha256:1111',
      'ghcr.io/fluxcd/kustomize-controller': 'ghcr.io/fluxcd/kustomize-controller:v1.9.6@sha256:2222',
    });
    expect(out.split('\n')).toEqual([
      '          image: ghcr.io/fluxcd/source-controller:v1.9.6@sha256:1111',
      '          image: ghcr.io/fluxcd/kustomize-controller:v1.9.6@sha256:2222',
      '          image: ghcr.io/fluxcd/source-controller-extra:v1',
      '          image: docker.io/library/redis:7',
    ]);
  });
});
