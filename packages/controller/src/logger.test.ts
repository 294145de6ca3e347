import { Writable } from 'node:stream';
import { fingerprint as coreFingerprint, REDACT_PATHS } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_REDACT_PATHS, createControllerLogger, fingerprint } from './logger.js';

describe('controller logger', () => {
  it('redacts at least every path core redacts, and fingerprints like core', () => {
    expect(CONTROLLER_REDACT_PATHS).toEqual(expect.arrayContaining([...REDACT_PATHS]));
    expect(fingerprint('s3cret')).toBe(coreFingerprint('s3cret'));
  });

  it('never writes a secret field', () => {
    const lines: string[] = [];
    const dest = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = createControllerLogger({ destination: dest as never });
    log.info({ token: 'tkn-123', auth: { password: 'pw-456' }, headers: { authorization: 'Bearer abc' } }, 'x');
    const text = lines.join('');
    for (const s of ['tkn-123', 'pw-456', 'Bearer abc']) expect(text).not.toContain(s);
  });
});
