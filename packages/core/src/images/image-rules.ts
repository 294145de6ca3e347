import { parseVerifierKey } from '@baton/audit';
import { z } from 'zod';
import type { ImageRef } from './image-ref.js';
import { KeylessPolicySchema } from './keyless-policy.js';

// Which images a trust rule governs: a repository as the manifests name it, registry first (`docker.io/library/redis`
// for Docker Hub's `redis`), where `*` stands for any characters within one path segment and `**` for any characters
// across segments. No tag and no digest: a rule governs every version of a repository, and the image is still pinned.
const SEGMENT = /^(?:[a-z0-9*]+(?:(?:[._]|__|-+)[a-z0-9*]+)*|\*\*)$/;

/** A repository pattern, or a string saying what is wrong with it. */
export function imagePatternProblem(pattern: string): string | undefined {
  const [registry, ...path] = pattern.split('/');
  if (pattern.includes('@') || path.some((s) => s.includes(':')))
    return 'a rule names a repository, without a tag or digest (the image itself must still be pinned by digest)';
  if (!registry || path.length === 0)
    return 'name the registry and the repository, e.g. ghcr.io/fluxcd/* or docker.io/library/redis';
  if (!/^(?:[a-zA-Z0-9.-]+|\*)(?::[0-9]+)?$/.test(registry) && registry !== '**')
    return `"${registry}" is not a registry host`;
  const bad = path.find((s) => !SEGMENT.test(s));
  return bad === undefined
    ? undefined
    : `"${bad}" is not a repository path segment (lowercase, digits, . _ -, * or **)`;
}

const ImagePatternSchema = z
  .string()
  .min(1)
  .superRefine((pattern, ctx) => {
    const problem = imagePatternProblem(pattern);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** True when `pattern` (see {@link imagePatternProblem}) names the repository of `ref`. */
export function matchesImage(pattern: string, ref: Pick<ImageRef, 'registry' | 'repository'>): boolean {
  const body = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${body}$`).test(`${ref.registry}/${ref.repository}`);
}

const UNSIGNED = z
  .string()
  .min(10)
  .max(512)
  .describe(
    'push these images without a signature, for this reason (recorded in the audit event with each digest): only for an upstream that publishes none, e.g. "Argo CD’s redis: the Docker official image is not signed"',
  );

const images = z
  .array(ImagePatternSchema)
  .min(1)
  .describe(
    'the repositories this rule governs, registry first: ghcr.io/fluxcd/source-controller, quay.io/argoproj/* (one segment) or ghcr.io/org/** (any depth); the first rule that matches an image decides',
  );

/** Verifier keys as `baton audit keygen` prints them (name+hash+base64), each checked to parse. */
export const VerifierKeysSchema = z
  .array(
    z.string().superRefine((key, ctx) => {
      const parsed = parseVerifierKey(key);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
    }),
  )
  .min(1);

const oneWay = (r: { unsigned?: string | undefined }, signers: number) =>
  (r.unsigned === undefined) !== (signers === 0);
const ONE_WAY = {
  message:
    'give a rule its signers (keys, keyless, or both) or unsigned with the reason, not both: unsigned images are pushed without any check',
};

/** A per-image rule of a profile's imageTrust: its verifier keys inline, as the profile's own keys are. */
export const ProfileImageRuleSchema = z
  .strictObject({
    images,
    keys: VerifierKeysSchema.optional().describe(
      'verifier keys (as `baton audit keygen` prints them) these images may be signed by',
    ),
    keyless: KeylessPolicySchema.optional(),
    unsigned: UNSIGNED.optional(),
  })
  .refine((r) => oneWay(r, (r.keys ? 1 : 0) + (r.keyless ? 1 : 0)), ONE_WAY)
  .describe('who signs the images of some repositories, instead of the imageTrust’s own keys and keyless');

/** A per-image rule of a plan's push.images: a trusted-keys file, as the plan's own trustedKeys is. */
export const PlanImageRuleSchema = z
  .strictObject({
    images,
    trustedKeys: z
      .string()
      .min(1)
      .optional()
      .describe('trusted-keys file (relative to the plan) whose keys these images may be signed by'),
    keyless: KeylessPolicySchema.optional(),
    unsigned: UNSIGNED.optional(),
  })
  .refine((r) => oneWay(r, (r.trustedKeys ? 1 : 0) + (r.keyless ? 1 : 0)), ONE_WAY)
  .describe('who signs the images of some repositories, instead of push.images.trustedKeys and keyless');

export type ProfileImageRule = z.infer<typeof ProfileImageRuleSchema>;
export type PlanImageRule = z.infer<typeof PlanImageRuleSchema>;
