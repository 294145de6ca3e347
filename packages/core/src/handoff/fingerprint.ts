import { createHash } from 'node:crypto';

/** `sha256:<64 hex>` of a secret: what audit records and summaries carry instead of the secret. */
export function fullFingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex')}`;
}
