import { readFileSync } from 'node:fs';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { gitSyncCrd, parseGitSyncSpec } from './gitsync.js';
import { crdYaml, specJsonSchema } from './gitsync-files.js';

const root = new URL('../../../', import.meta.url);

describe('GitSync schema', () => {
  it('applies defaults', () => {
    expect(parseGitSyncSpec({ url: 'https://git.example/x.git' }, 'GitSync a/b')).toMatchObject({
      ref: { branch: 'main' },
      path: '.',
      intervalSeconds: 60,
      prune: true,
      suspend: false,
    });
  });

  it('names the object and field of an invalid spec', () => {
    expect(() => parseGitSyncSpec({ url: 'ssh://x', intervalSeconds: 1 }, 'GitSync a/b')).toThrow(
      /GitSync a\/b: invalid spec.*url.*intervalSeconds/s,
    );
    expect(() => parseGitSyncSpec({ url: 'https://x', typo: 1 }, 'GitSync a/b')).toThrow(ConfigError);
  });

  it('requires exactly one of branch, tag or commit', () => {
    expect(() => parseGitSyncSpec({ url: 'https://x', ref: { branch: 'a', tag: 'b' } }, 'GitSync a/b')).toThrow(
      /exactly one of branch, tag or commit/,
    );
  });

  it('generates a structural CRD schema (no additionalProperties: false, no $schema)', () => {
    const text = JSON.stringify(gitSyncCrd());
    expect(text).not.toContain('"additionalProperties":false');
    expect(text).not.toContain('$schema');
    expect(text).toContain('"status":{}');
  });

  it('the committed CRD and JSON Schema match the zod schema (run scripts/write-crd.ts to refresh)', () => {
    expect(readFileSync(new URL('bootstrap-manifests/baton-controller/30-crd.yaml', root), 'utf8')).toBe(crdYaml());
    expect(readFileSync(new URL('packages/controller/schemas/gitsync-spec.schema.json', root), 'utf8')).toBe(
      specJsonSchema(),
    );
  });
});
