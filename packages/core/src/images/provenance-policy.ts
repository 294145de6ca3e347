import { z } from 'zod';

/** What an image's SLSA provenance must say, when a trust policy asks for it. */
export const ProvenancePolicySchema = z
  .strictObject({
    builders: z
      .array(z.string().min(1))
      .min(1)
      .describe(
        'builder ids (the provenance’s runDetails.builder.id) trusted to have built the images, e.g. https://baton.dev/image-build/pnpm-image-build@v1',
      ),
    sources: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'source repositories the images may be built from: the provenance’s externalParameters.source.uri, or a GitHub Actions build’s externalParameters.workflow.repository, e.g. git+https://github.com/baton-dev/baton; @default any',
      ),
  })
  .describe(
    'require, with each signed image, an SLSA provenance v1 attestation of its digest, signed by the same keys or identities as the image, naming a trusted builder (and source)',
  );

export type ProvenancePolicy = z.infer<typeof ProvenancePolicySchema>;

/** What a verified provenance says: the builder, and the source when it names one. */
export interface ProvenanceFacts {
  readonly builder: string;
  readonly source?: string;
}

/**
 * The builder and source an SLSA provenance v1 predicate names, or a string saying why `policy` refuses it.
 * The source is `externalParameters.source.uri` (baton's image build and builders like it) or
 * `externalParameters.workflow.repository` (GitHub Actions' build type).
 */
export function checkProvenance(predicate: unknown, policy: ProvenancePolicy): ProvenanceFacts | string {
  const p = predicate as {
    runDetails?: { builder?: { id?: unknown } };
    buildDefinition?: {
      externalParameters?: { source?: { uri?: unknown }; workflow?: { repository?: unknown } };
    };
  };
  const builder = p?.runDetails?.builder?.id;
  if (typeof builder !== 'string') return 'it names no builder (runDetails.builder.id)';
  if (!policy.builders.includes(builder))
    return `built by ${builder}, which is not a trusted builder (${policy.builders.join(', ')})`;
  const ext = p.buildDefinition?.externalParameters;
  const source = ext?.source?.uri ?? ext?.workflow?.repository;
  if (policy.sources) {
    if (typeof source !== 'string')
      return 'it names no source (externalParameters.source.uri or workflow.repository) and the policy lists sources';
    if (!policy.sources.includes(source))
      return `built from ${source}, which is not a trusted source (${policy.sources.join(', ')})`;
  }
  return { builder, ...(typeof source === 'string' ? { source } : {}) };
}
