import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createControllerLogger, fingerprint } from './logger.js';

describe('controller logger', () => {
  it('never writes a secret field, and logs fingerprints instead', () => {
    const lines: string[] = [];
    const dest = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = createControllerLogger({ destination: dest as never });
    log.info(
      {
        token: 'tkn-123',
        auth: { password: 'pw-456' },
        headers: { authorization: 'Bearer abc' },
        fp: fingerprint('tkn-123'),
      },
      'x',
    );
    const text = lines.join('');
    for (const s of ['tkn-123', 'pw-456', 'Bearer abc']) expect(text).not.toContain(s);
    expect(text).toContain(fingerprint('tkn-123'));
  });
});
