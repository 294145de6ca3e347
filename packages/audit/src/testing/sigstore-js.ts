import { createPublicKey } from 'node:crypto';
import { bundleFromJSON } from '@sigstore/bundle';
import { toSignedEntity, toTrustMaterial, Verifier } from '@sigstore/verify';
import type { SigningKey } from '../signing-key.js';

/**
 * Verifies a bundle with Sigstore's own JavaScript verifier (the sigstore-js of npm's provenance), trusting only
 * `key`, offline (no transparency log, no certificate authority).
 * @throws Error when sigstore-js refuses it.
 */
export function sigstoreJsVerify(bundle: unknown, key: SigningKey): void {
  const pem = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key.publicKey]),
    format: 'der',
    type: 'spki',
  });
  const trust = toTrustMaterial(
    {
      mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
      tlogs: [],
      certificateAuthorities: [],
      ctlogs: [],
      timestampAuthorities: [],
    },
    (hint) => {
      if (hint !== `${key.name}+${key.keyId.toString('hex')}`) throw new Error(`unknown key ${hint}`);
      return { publicKey: pem, validFor: () => true };
    },
  );
  const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
  verifier.verify(toSignedEntity(bundleFromJSON(JSON.parse(JSON.stringify(bundle)))));
}
