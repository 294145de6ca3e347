import { describe, expect, test } from 'vitest';
import { parseImageRef, registryApiHost } from './image-ref.js';

const D = `sha256:${'a'.repeat(64)}`;

describe('parseImageRef', () => {
  test.each([
    [
      `ghcr.io/baton-dev/baton-controller@${D}`,
      { registry: 'ghcr.io', repository: 'baton-dev/baton-controller', digest: D },
    ],
    [
      `ghcr.io/fluxcd/source-controller:v1.7.0@${D}`,
      { registry: 'ghcr.io', repository: 'fluxcd/source-controller', tag: 'v1.7.0', digest: D },
    ],
    ['10.0.0.1:5000/a/b:1', { registry: '10.0.0.1:5000', repository: 'a/b', tag: '1' }],
    ['localhost/x', { registry: 'localhost', repository: 'x' }],
    ['redis:7', { registry: 'docker.io', repository: 'library/redis', tag: '7' }],
    ['bitnami/redis', { registry: 'docker.io', repository: 'bitnami/redis' }],
  ])('%s', (text, want) => {
    expect(parseImageRef(text)).toEqual({ text, ...want });
  });

  test.each([
    ['ghcr.io/a@sha256:12', 'the digest "sha256:12" is not sha256:<64 hex digits>'],
    ['ghcr.io/A/b', '"A/b" is not a valid repository name'],
    ['ghcr.io/a:b c', 'the tag "b c" is not a valid tag'],
  ])('refuses %s', (text, why) => {
    expect(parseImageRef(text)).toBe(why);
  });

  test("Docker Hub's API host", () => {
    expect(registryApiHost('docker.io')).toBe('registry-1.docker.io');
    expect(registryApiHost('ghcr.io')).toBe('ghcr.io');
  });
});
