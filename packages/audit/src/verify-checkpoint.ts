import { type Checkpoint, parseCheckpoint } from './checkpoint.js';
import { parseNote } from './signed-note.js';
import { verifyEd25519 } from './signing-key.js';
import type { TrustedKey, TrustedKeySet } from './trusted-keys.js';

/** A checkpoint whose note carries at least one good signature from a trusted key for the expected origin. */
export interface TrustedCheckpoint {
  readonly ok: true;
  readonly checkpoint: Checkpoint;
  /** The trusted keys whose signatures verified (their validity windows are checked by the caller). */
  readonly signedBy: readonly TrustedKey[];
}

/** Why a checkpoint note is not trusted. */
export interface UntrustedCheckpoint {
  readonly ok: false;
  readonly kind: 'corrupt' | 'unknown-key' | 'bad-signature' | 'origin-mismatch';
  readonly reason: string;
  /** The checkpoint body, when it parsed. */
  readonly checkpoint?: Checkpoint;
}

/**
 * Verifies a signed checkpoint note against the trusted keys: a well-formed C2SP tlog-checkpoint, the trusted
 * origin, and at least one valid signature by a trusted key. Signatures by unknown keys are ignored, as C2SP
 * signed-note requires (that is what lets witnesses cosign and keys rotate); a trusted key's signature that does not
 * verify fails the note. Never throws.
 */
export function verifyCheckpointNote(
  note: Uint8Array | string,
  keys: TrustedKeySet,
): TrustedCheckpoint | UntrustedCheckpoint {
  const parsed = parseNote(note);
  if (typeof parsed === 'string') return { ok: false, kind: 'corrupt', reason: parsed };
  const checkpoint = parseCheckpoint(parsed.text);
  if (typeof checkpoint === 'string') return { ok: false, kind: 'corrupt', reason: checkpoint };
  if (checkpoint.origin !== keys.origin) {
    return {
      ok: false,
      kind: 'origin-mismatch',
      checkpoint,
      reason: `is for log "${checkpoint.origin}", but the trusted keys are for "${keys.origin}"`,
    };
  }
  const text = Buffer.from(parsed.text, 'utf8');
  const signedBy: TrustedKey[] = [];
  for (const sig of parsed.signatures) {
    for (const key of keys.forNoteSignature(sig.name, sig.keyId)) {
      if (!verifyEd25519(key.keyObject, text, sig.signature)) {
        return {
          ok: false,
          kind: 'bad-signature',
          checkpoint,
          reason: `has a signature by ${sig.name} that does not verify`,
        };
      }
      signedBy.push(key);
    }
  }
  if (signedBy.length === 0) {
    const names = parsed.signatures.map((s) => `${s.name}+${s.keyId.toString('hex')}`).join(', ');
    return {
      ok: false,
      kind: 'unknown-key',
      checkpoint,
      reason: `is signed only by keys that are not trusted (${names || 'none'})`,
    };
  }
  return { ok: true, checkpoint, signedBy };
}
