import { z } from 'zod';
import { type HandoffRecord, HandoffRecordSchema } from './handoff-record.js';

/** in-toto Statement v1 `_type`. */
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
/** The predicate type of a baton handoff record. */
export const HANDOFF_PREDICATE_TYPE = 'https://baton.dev/handoff/v1';

/** An in-toto ResourceDescriptor as a subject: a name and a DigestSet. */
export const SubjectSchema = z.strictObject({
  name: z.string().min(1).max(2048),
  digest: z
    .record(z.string().regex(/^[A-Za-z0-9]+$/), z.string().regex(/^[0-9a-f]+$/))
    .refine((d) => Object.keys(d).length > 0, 'must hold at least one digest'),
});

/** An in-toto Statement v1 whose predicate is a baton handoff record. */
export const HandoffStatementSchema = z
  .strictObject({
    _type: z.literal(IN_TOTO_STATEMENT_TYPE),
    subject: z.array(SubjectSchema).min(1).max(16).describe('what was installed, from which source'),
    predicateType: z.literal(HANDOFF_PREDICATE_TYPE),
    predicate: HandoffRecordSchema,
  })
  .describe('in-toto Statement v1 about one handoff');

/** An in-toto Statement v1 about one handoff. */
export type HandoffStatement = z.infer<typeof HandoffStatementSchema>;

/**
 * Builds the statement for a record. Its subjects are what the handoff installed: the controller image and the other
 * images whose signatures were verified, then those a rule let through unsigned (up to 13: a statement names at most 16 subjects), the manifest bundle and
 * the Git commit the controller now follows.
 */
export function buildStatement(record: HandoffRecord): HandoffStatement {
  const { push, pull } = record.plan;
  // The images whose signatures were verified, each once; the controller's first (it is one of them when verified).
  // Images a rule let through unsigned follow: they were installed too, pinned by digest.
  const verified = [...(push.images?.verified ?? []), ...(push.images?.unsigned ?? [])].filter(
    (v) => v.digest !== push.controller.imageDigest,
  );
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [
      // An image pinned by a release tag has no digest to name: the bundle's digest covers its reference.
      ...(push.controller.imageDigest
        ? [{ name: push.controller.image, digest: { sha256: push.controller.imageDigest.slice('sha256:'.length) } }]
        : []),
      ...verified
        .slice(0, 13)
        .map((v) => ({ name: v.image.split('@')[0]!, digest: { sha256: v.digest.slice('sha256:'.length) } })),
      { name: `bootstrap-manifests/${push.profile}`, digest: { sha256: push.bundleDigest.slice('sha256:'.length) } },
      { name: pull.source.url, digest: { gitCommit: pull.source.revision } },
    ],
    predicateType: HANDOFF_PREDICATE_TYPE,
    predicate: record,
  };
}
