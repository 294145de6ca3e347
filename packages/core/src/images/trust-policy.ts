import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type KeylessTrust, keylessTrust, parseTrustedKeys, TrustedKeySet } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import type { HandoffPlan } from '../handoff-plan.js';
import type { LoadedProfile } from '../profile.js';
import type { KeylessPolicy } from './keyless-policy.js';
import type { ImageTrustPolicy } from './verify-images.js';

/**
 * What the push set's images must be signed by: the plan's `push.images` (trustedKeys, keyless, or both), else the
 * profile's `imageTrust`; undefined when neither declares any.
 * @throws {ConfigError} naming the field and file when a trusted-keys file or trusted root cannot be read or is not one.
 */
export async function imageTrustPolicy(
  plan: HandoffPlan,
  profile: LoadedProfile | undefined,
): Promise<ImageTrustPolicy | undefined> {
  const { trustedKeys, keyless } = plan.push.images;
  if (trustedKeys || keyless) {
    const sources = [
      ...(trustedKeys ? [`push.images.trustedKeys (${trustedKeys})`] : []),
      ...(keyless ? [`push.images.keyless (${keyless.trustedRoot})`] : []),
    ];
    return {
      source: sources.join(' and '),
      ...(trustedKeys
        ? {
            keys: parseTrustedKeys(
              readPolicyFile(
                'push.images.trustedKeys',
                trustedKeys,
                'the trusted-keys file of the keys that sign the images',
              ),
              trustedKeys,
            ),
          }
        : {}),
      ...(keyless
        ? { keyless: await readKeyless('push.images.keyless.trustedRoot', keyless, keyless.trustedRoot) }
        : {}),
    };
  }
  const trust = profile?.profile.imageTrust;
  if (!trust) return undefined;
  const field = `profile ${profile.profile.name} (${profile.file}): imageTrust`;
  return {
    source: field,
    ...(trust.keys
      ? { keys: new TrustedKeySet({ origin: profile.profile.name, keys: trust.keys.map((key) => ({ key })) }) }
      : {}),
    ...(trust.keyless
      ? {
          keyless: await readKeyless(
            `${field}.keyless.trustedRoot`,
            trust.keyless,
            resolve(dirname(profile.file), trust.keyless.trustedRoot),
          ),
        }
      : {}),
  };
}

function readKeyless(field: string, policy: KeylessPolicy, file: string): Promise<KeylessTrust> {
  const text = readPolicyFile(field, file, 'a Sigstore trusted root (trusted_root.json) for the keyless signers');
  return keylessTrust(text, file, policy.identities);
}

function readPolicyFile(field: string, file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `${field}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); point it at ${what}`,
      { cause: err },
    );
  }
}
