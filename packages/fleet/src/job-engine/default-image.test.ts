import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultShardImage } from './default-image.js';

describe('defaultShardImage', () => {
  it('is the baton CLI image job-image.json pins by digest (pnpm image:build --pin writes it)', () => {
    const pinned = JSON.parse(readFileSync(new URL('../../job-image.json', import.meta.url), 'utf8')) as {
      image: string;
    };
    expect(defaultShardImage()).toBe(pinned.image);
    expect(defaultShardImage()).toMatch(/^ghcr\.io\/baton-dev\/baton@sha256:[0-9a-f]{64}$/);
  });
});
