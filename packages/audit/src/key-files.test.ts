import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readSigningKeyFile, writeSigningKeyPair } from './key-files.js';
import { parseTrustedKeys } from './trusted-keys.js';

describe('writeSigningKeyPair', () => {
  test("names a new log's checkpoint key for its origin (C2SP tlog-checkpoint SHOULD)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-keys-'));
    try {
      const paths = { signingKeyPath: join(dir, 'k.key'), keysPath: join(dir, 'trusted-keys.yaml') };
      await writeSigningKeyPair({ ...paths, origin: 'ops.example/audit' });
      const key = await readSigningKeyFile(paths.signingKeyPath);
      expect(key.name).toBe('ops.example/audit');
      const trusted = parseTrustedKeys(await readFile(paths.keysPath, 'utf8'), paths.keysPath);
      expect(trusted.origin).toBe(key.name);
      expect(trusted.toFile().keys[0]!.key).toBe(key.verifierKey);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
