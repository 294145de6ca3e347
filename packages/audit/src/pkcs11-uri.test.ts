import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { describe, expect, test } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { parsePkcs11Uri, redactPkcs11Uri } from './pkcs11-uri.js';

const tempDir = useTempDirs();
const MODULE = 'module-path=/usr/lib/softhsm/libsofthsm2.so';

describe('PKCS#11 URIs (RFC 7512)', () => {
  test('reads the token, key label, percent-encoded id and slot, and the PIN from a file only when asked', () => {
    const dir = tempDir('baton-p11-uri-');
    const pinFile = join(dir, 'pin');
    const u = parsePkcs11Uri(
      `pkcs11:token=Ops%20HSM;object=handoff;id=%01%ff;slot-id=7;type=private?${MODULE}&pin-source=file:${pinFile}`,
      'plan.yaml: audit.signer.pkcs11',
      {},
    );
    expect(u).toMatchObject({
      modulePath: '/usr/lib/softhsm/libsofthsm2.so',
      token: 'Ops HSM',
      object: 'handoff',
      slotId: 7,
      pinFrom: 'pin-source',
    });
    expect(u.id).toEqual(Buffer.from([0x01, 0xff]));
    writeFileSync(pinFile, '4321\n');
    expect(u.pin()).toBe('4321');
    expect(parsePkcs11Uri(`pkcs11:token=t;object=k?${MODULE}`, 's', { BATON_PKCS11_PIN: '99' }).pin()).toBe('99');
  });

  test.each([
    ['pkcs12:token=t', /starts with "pkcs11:"/],
    ['pkcs11:token=t;object=k', /names no module-path; add \?module-path=/],
    [`pkcs11:object=k?${MODULE}`, /names no token; add token=<label>/],
    [`pkcs11:token=t?${MODULE}`, /names no key; add object=<label>/],
    [`pkcs11:token=t;object=k;colour=red?${MODULE}`, /unknown attribute "colour"/],
    [`pkcs11:token=t;object=k;type=public?${MODULE}`, /type must be private/],
    [`pkcs11:token=t;object=k?${MODULE}&pin-value=s3cret&pin-source=/p`, /give pin-value or pin-source, not both/],
  ])('%s is refused naming the source and the rule', (uri, message) => {
    const err = (() => {
      try {
        parsePkcs11Uri(uri, 'plan.yaml: audit.signer.pkcs11', {});
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toMatch(/^plan\.yaml: audit\.signer\.pkcs11: /);
    expect(err?.message).toMatch(message);
    expect(err?.message).not.toContain('s3cret');
  });

  test('a pin-value never reaches a message', () => {
    expect(redactPkcs11Uri(`pkcs11:token=t;object=k?pin-value=s3cret&${MODULE}`)).toBe(
      `pkcs11:token=t;object=k?pin-value=redacted&${MODULE}`,
    );
    const u = parsePkcs11Uri(`pkcs11:token=t;object=k?${MODULE}&pin-value=s3cret`, 's', {});
    expect(u.display).not.toContain('s3cret');
    expect(u.pin()).toBe('s3cret');
  });
});
