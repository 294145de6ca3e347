import { isUtf8 } from 'node:buffer';
import { isValidKeyName, type Signer } from './signing-key.js';

/** Signature lines start with an em dash (U+2014) and a space. */
const SIG_PREFIX = '\u2014 ';
// C2SP signed-note: verifiers may reject notes with more signatures than this; Go's note package uses 100.
const MAX_SIGNATURES = 100;

/** One signature line of a signed note: who claims to have signed, with which key ID, and the signature bytes. */
export interface NoteSignature {
  /** Key name from the signature line. */
  readonly name: string;
  /** First 4 bytes of the base64 blob: the key ID hint. */
  readonly keyId: Buffer;
  /** The remaining bytes: the signature itself. */
  readonly signature: Buffer;
}

/** A signed note split into its text and signature lines (no signature is checked here). */
export interface ParsedNote {
  /** The signed text, ending in a newline. */
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

/**
 * Signs `text` as a C2SP signed note: the text, a blank line, then one `— name base64(keyID ‖ sig)` line per signer.
 * @throws {RangeError} when the text does not end in a newline, contains control characters or is empty.
 */
export async function signNote(text: string, signers: readonly Signer[]): Promise<string> {
  const problem = checkNoteText(text);
  if (problem) throw new RangeError(`cannot sign note: ${problem}`);
  if (signers.length === 0) throw new RangeError('cannot sign note: no signer given');
  const body = Buffer.from(text, 'utf8');
  const lines = await Promise.all(
    signers.map(async (s) => {
      const blob = Buffer.concat([s.keyId, await s.sign(body)]).toString('base64');
      return `${SIG_PREFIX}${s.name} ${blob}\n`;
    }),
  );
  return `${text}\n${lines.join('')}`;
}

/**
 * Splits a signed note into text and signature lines, following C2SP signed-note (and Go's `note.Open`):
 * the text is everything up to the last blank line. Returns a reason string on malformed input; never throws.
 */
export function parseNote(note: Uint8Array | string): ParsedNote | string {
  const bytes = typeof note === 'string' ? Buffer.from(note, 'utf8') : Buffer.from(note);
  if (!isUtf8(bytes)) return 'note is not valid UTF-8';
  const msg = bytes.toString('utf8');
  const split = msg.lastIndexOf('\n\n');
  if (split < 0) return 'note has no blank line between text and signatures';
  const text = msg.slice(0, split + 1);
  const problem = checkNoteText(text);
  if (problem) return problem;
  const sigBlock = msg.slice(split + 2);
  if (!sigBlock.endsWith('\n')) return 'note signature block does not end in a newline';
  const lines = sigBlock.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) return `note has more than ${MAX_SIGNATURES} signatures`;
  const signatures: NoteSignature[] = [];
  for (const [i, line] of lines.entries()) {
    if (!line.startsWith(SIG_PREFIX)) return `signature line ${i + 1} does not start with "— "`;
    const rest = line.slice(SIG_PREFIX.length);
    const space = rest.indexOf(' ');
    if (space <= 0) return `signature line ${i + 1} has no key name`;
    const name = rest.slice(0, space);
    if (!isValidKeyName(name)) return `signature line ${i + 1} has an invalid key name`;
    const blob = Buffer.from(rest.slice(space + 1), 'base64');
    if (blob.length < 5 || blob.toString('base64') !== rest.slice(space + 1)) {
      return `signature line ${i + 1} is not base64 of a key ID and a signature`;
    }
    signatures.push({ name, keyId: blob.subarray(0, 4), signature: blob.subarray(4) });
  }
  return { text, signatures };
}

function checkNoteText(text: string): string | undefined {
  if (text.length === 0 || !text.endsWith('\n')) return 'note text must be non-empty and end in a newline';
  // C2SP signed-note: the text is UTF-8 without control characters other than newline.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x0a) || c === 0x7f) return 'note text contains control characters';
  }
  return undefined;
}
