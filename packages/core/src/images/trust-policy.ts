import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type KeylessTrust, keylessTrust, parseTrustedKeys, TrustedKeySet } from '@baton/audit';
import { ConfigError } from '@baton/errors';
import type { HandoffPlan } from '../handoff-plan.js';
import type { LoadedProfile } from '../profile.js';
import type { KeylessPolicy } from './keyless-policy.js';
import type { ProvenancePolicy } from './provenance-policy.js';
import type { ImageSigners, ImageTrustPolicy, ImageTrustRule } from './verify-images.js';

/**
 * What the push set's images must be signed by: the plan's `push.images` (trustedKeys, keyless, or both), else the
 * profile's `imageTrust`; undefined when neither declares any.
 * @throws {ConfigError} naming the field and file when a trusted-keys file or trusted root cannot be read or is not one.
 */
export async function imageTrustPolicy(
  plan: HandoffPlan,
  profile: LoadedProfile | undefined,
): Promise<ImageTrustPolicy | undefined> {
  const { trustedKeys, keyless, rules, provenance } = plan.push.images;
  if (trustedKeys || keyless || rules) {
    const sources = [
      ...(trustedKeys ? [`push.images.trustedKeys (${trustedKeys})`] : []),
      ...(keyless ? [`push.images.keyless (${keyless.trustedRoot})`] : []),
      ...(rules ? ['push.images.rules'] : []),
    ];
    return {
      source: sources.join(' and '),
      ...(await planSigners('push.images', { trustedKeys, keyless })),
      ...provenanceOf(provenance),
      ...(await resolveRules('push.images.rules', rules, planSigners)),
    };
  }
  const trust = profile?.profile.imageTrust;
  if (!trust) {
    if (provenance)
      throw new ConfigError(
        `push.images.provenance: provenance is checked with each image's signature, and neither the plan (push.images.trustedKeys, keyless or rules) nor profile ${plan.push.profile} (imageTrust) names who signs the images: declare the signers too`,
      );
    return undefined;
  }
  const field = `profile ${profile.profile.name} (${profile.file}): imageTrust`;
  const signers = (at: string, t: { keys?: readonly string[] | undefined; keyless?: KeylessPolicy | undefined }) =>
    profileSigners(at, t, profile);
  return {
    source: field,
    ...(await signers(field, trust)),
    ...provenanceOf(provenance ?? trust.provenance),
    ...(await resolveRules(`${field}.rules`, trust.rules, signers)),
  };
}

/** The provenance rule (the plan's replaces the profile's, as its signers would), as a spreadable field. */
const provenanceOf = (p: ProvenancePolicy | undefined) => (p ? { provenance: p } : {});

/**
 * The rules, each labelled by its field (`<field>[i]`) with its own signers or its reason for letting its images
 * through unsigned, as a spreadable field.
 */
async function resolveRules<R extends { images: string[]; unsigned?: string | undefined }>(
  field: string,
  rules: readonly R[] | undefined,
  signers: (field: string, rule: R) => Promise<ImageSigners>,
): Promise<{ rules?: ImageTrustRule[] }> {
  if (!rules) return {};
  return {
    rules: await Promise.all(
      rules.map(async (r, i) => {
        const label = `${field}[${i}]`;
        return {
          label,
          images: r.images,
          ...(r.unsigned !== undefined ? { unsigned: r.unsigned } : await signers(label, r)),
        };
      }),
    ),
  };
}

async function planSigners(
  field: string,
  t: { trustedKeys?: string | undefined; keyless?: KeylessPolicy | undefined },
): Promise<ImageSigners> {
  return {
    ...(t.trustedKeys
      ? {
          keys: parseTrustedKeys(
            readPolicyFile(
              `${field}.trustedKeys`,
              t.trustedKeys,
              'the trusted-keys file of the keys that sign the images',
            ),
            t.trustedKeys,
          ),
        }
      : {}),
    ...(t.keyless
      ? { keyless: await readKeyless(`${field}.keyless.trustedRoot`, t.keyless, t.keyless.trustedRoot) }
      : {}),
  };
}

async function profileSigners(
  field: string,
  t: { keys?: readonly string[] | undefined; keyless?: KeylessPolicy | undefined },
  profile: LoadedProfile,
): Promise<ImageSigners> {
  return {
    ...(t.keys
      ? { keys: new TrustedKeySet({ origin: profile.profile.name, keys: t.keys.map((key) => ({ key })) }) }
      : {}),
    ...(t.keyless
      ? {
          keyless: await readKeyless(
            `${field}.keyless.trustedRoot`,
            t.keyless,
            resolve(dirname(profile.file), t.keyless.trustedRoot),
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
