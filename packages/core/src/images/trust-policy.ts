import { readFileSync } from 'node:fs';
import { parseTrustedKeys, TrustedKeySet } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import type { HandoffPlan } from '../handoff-plan.js';
import type { LoadedProfile } from '../profile.js';
import type { ImageTrustPolicy } from './verify-images.js';

/**
 * The keys the push set's images must be signed by: the plan's `push.images.trustedKeys` file, else the profile's
 * `imageTrust`; undefined when neither declares any.
 * @throws {ConfigError} naming the file when the trusted-keys file cannot be read or is not one.
 */
export function imageTrustPolicy(plan: HandoffPlan, profile: LoadedProfile | undefined): ImageTrustPolicy | undefined {
  const file = plan.push.images.trustedKeys;
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(
        `push.images.trustedKeys: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); point it at the trusted-keys file of the keys that sign the images`,
        { cause: err },
      );
    }
    return { source: `push.images.trustedKeys (${file})`, keys: parseTrustedKeys(text, file) };
  }
  const trust = profile?.profile.imageTrust;
  if (!trust) return undefined;
  return {
    source: `profile ${profile.profile.name} (${profile.file}): imageTrust`,
    keys: new TrustedKeySet({ origin: profile.profile.name, keys: trust.keys.map((key) => ({ key })) }),
  };
}
