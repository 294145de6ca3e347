import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, fingerprint } from './logger.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('never writes a token, password, private key, kubeconfig or authorization header', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination, level: 'debug' });
    const token = 'eyJhbGciOiJSUzI1NiJ9.minted-in-test.signature';
    log.info({ token }, 'top-level');
    log.info({ credential: { token, fingerprint: fingerprint(token) } }, 'nested');
    log.info({ request: { headers: { authorization: `Bearer ${token}` } } }, 'header');
    log.info({ user: { password: token, privateKey: token, kubeconfig: token } }, 'user');
    log.child({ step: 'mint' }).info({ token }, 'child');
    log.info({ plan: { cluster: { kubeconfigContent: token } } }, 'inline kubeconfig');
    const out = lines.join('');
    expect(out).not.toContain(token);
    expect(out).toContain(fingerprint(token));
    expect(out.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(7);
  });
});

describe('fingerprint', () => {
  it('is stable, short and does not contain the secret', () => {
    expect(fingerprint('abc')).toBe('sha256:ba7816bf8f01cfea');
    expect(fingerprint('abc')).not.toContain('abc');
  });
});
