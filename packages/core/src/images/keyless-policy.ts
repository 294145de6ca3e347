import { z } from 'zod';

/** One OIDC identity a keyless image signature may name (cosign's --certificate-oidc-issuer and --certificate-identity). */
export const KeylessIdentitySchema = z
  .strictObject({
    issuer: z
      .url({ protocol: /^https?$/ })
      .describe(
        'the OIDC issuer the certificate names, compared exactly, e.g. https://token.actions.githubusercontent.com',
      ),
    subject: z
      .string()
      .min(1)
      .optional()
      .describe(
        'the certificate subject, compared exactly: a workflow URI (https://github.com/org/repo/.github/workflows/release.yml@refs/tags/v1.2.3) or an email',
      ),
    subjectRegExp: z
      .string()
      .min(1)
      .superRefine((pattern, ctx) => {
        try {
          new RegExp(pattern, 'u');
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: `not a regular expression: ${(err as Error).message}` });
        }
      })
      .optional()
      .describe(
        'a regular expression the whole subject must match (anchored, unlike cosign’s --certificate-identity-regexp), e.g. ^https://github\\.com/fluxcd/.+$',
      ),
  })
  .refine((id) => (id.subject === undefined) !== (id.subjectRegExp === undefined), {
    message: 'name the signer by exactly one of subject (exact) or subjectRegExp (pattern)',
  });

/** Keyless trust: a Sigstore trusted root read offline and the identities it may vouch for. */
export const KeylessPolicySchema = z
  .strictObject({
    trustedRoot: z
      .string()
      .min(1)
      .describe(
        'Sigstore trusted root file (trusted_root.json: the Fulcio CAs, CT logs and transparency logs to trust; relative to the file that names it), read offline',
      ),
    identities: z.array(KeylessIdentitySchema).min(1).describe('the identities a signature may name; any one will do'),
  })
  .describe('keyless signatures (a Fulcio certificate for an OIDC identity, logged in Rekor) the images may carry');

/** A keyless policy as a plan or profile declares it. */
export type KeylessPolicy = z.infer<typeof KeylessPolicySchema>;
