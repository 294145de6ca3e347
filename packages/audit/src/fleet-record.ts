import { z } from 'zod';
import { ActorSchema } from './handoff-record.js';
import { IN_TOTO_STATEMENT_TYPE, SubjectSchema } from './statement.js';

const Timestamp = z.iso.datetime({ offset: true });
const Sha256Digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be sha256:<64 lowercase hex digits>');
const Name = z.string().min(1).max(253);

/** The CloudEvents `type` of a fleet event (`fleet-started`, `fleet-finished`). */
export const FLEET_EVENT_TYPE = 'dev.baton.fleet.v1';
/** The in-toto predicate type of a fleet record. */
export const FLEET_PREDICATE_TYPE = 'https://baton.dev/fleet/v1';

/** How a cluster ended in a fleet run (`not-started`: the budget was spent first). */
export const FleetClusterStatusSchema = z.enum([
  'handed-off',
  'already-handed-off',
  'failed',
  'aborted',
  'not-started',
]);

/** One cluster in a wave: at `started` only its name; at `finished` how it ended and where its event is. */
export const FleetClusterEntrySchema = z.strictObject({
  name: Name,
  status: FleetClusterStatusSchema.optional().describe('present in fleet-finished'),
  attempts: z.number().int().nonnegative().optional(),
  runId: z.string().max(128).optional().describe('the handoff run whose event records this cluster'),
  auditIndex: z.number().int().nonnegative().optional().describe('that event’s index in this log'),
});

/**
 * A fleet run's record: the in-toto predicate of `fleet-started` and `fleet-finished` events, which frame the
 * clusters' own handoff events in the same log.
 */
export const FleetRecordSchema = z
  .strictObject({
    fleetRunId: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,100}$/, 'must be 1-101 letters, digits, . _ : -')
      .describe('the fleet run; every handoff of it carries actor.fleetRunId'),
    phase: z.enum(['started', 'finished']),
    fleet: z.strictObject({
      name: Name,
      fileDigest: Sha256Digest.describe('SHA-256 of the fleet file as read'),
      clusterCount: z.number().int().nonnegative().describe('clusters in the fleet file'),
    }),
    actor: ActorSchema,
    engine: z.enum(['local', 'job']),
    shard: z.strictObject({ index: z.number().int().nonnegative(), count: z.number().int().positive() }).optional(),
    policy: z.strictObject({
      concurrency: z.number().int().positive(),
      failureBudget: z.number().int().nonnegative().describe('failed clusters tolerated, as a count'),
      retries: z.number().int().nonnegative(),
    }),
    startedAt: Timestamp,
    finishedAt: Timestamp.optional().describe('fleet-finished only: the CloudEvent time'),
    outcome: z.enum(['succeeded', 'partial', 'halted', 'aborted']).optional().describe('fleet-finished only'),
    failed: z.number().int().nonnegative().optional().describe('fleet-finished only: clusters that failed'),
    waves: z
      .array(
        z.strictObject({
          index: z.number().int().nonnegative(),
          name: Name,
          clusters: z.array(FleetClusterEntrySchema).max(5000),
        }),
      )
      .max(1000),
  })
  .superRefine((r, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const finished = r.phase === 'finished';
    if (finished !== (r.finishedAt !== undefined)) issue(['finishedAt'], 'is required in fleet-finished only');
    if (finished !== (r.outcome !== undefined)) issue(['outcome'], 'is required in fleet-finished only');
    if (r.finishedAt && Date.parse(r.finishedAt) < Date.parse(r.startedAt))
      issue(['finishedAt'], 'must not be before startedAt');
    const total = r.waves.reduce((n, w) => n + w.clusters.length, 0);
    if (total > 5000) issue(['waves'], 'may list at most 5000 clusters in all');
    for (const [i, w] of r.waves.entries()) {
      for (const [j, c] of w.clusters.entries()) {
        if (finished && c.status === undefined)
          issue(['waves', i, 'clusters', j, 'status'], 'is required in fleet-finished');
      }
    }
  })
  .describe('baton fleet record: the in-toto predicate of dev.baton.fleet.v1 events');

/** A fleet run's record (in-toto predicate). */
export type FleetRecord = z.infer<typeof FleetRecordSchema>;

/** An in-toto Statement v1 whose predicate is a fleet record; its subject is the fleet file. */
export const FleetStatementSchema = z
  .strictObject({
    _type: z.literal(IN_TOTO_STATEMENT_TYPE),
    subject: z.array(SubjectSchema).min(1).max(16),
    predicateType: z.literal(FLEET_PREDICATE_TYPE),
    predicate: FleetRecordSchema,
  })
  .describe('in-toto Statement v1 about one fleet run');

/** An in-toto Statement v1 about a fleet run. */
export type FleetStatement = z.infer<typeof FleetStatementSchema>;

/** The statement for a fleet record: its subject is the fleet file, by digest. */
export function buildFleetStatement(record: FleetRecord): FleetStatement {
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [
      { name: `fleet/${record.fleet.name}`, digest: { sha256: record.fleet.fileDigest.slice('sha256:'.length) } },
    ],
    predicateType: FLEET_PREDICATE_TYPE,
    predicate: record,
  };
}

/** The time a fleet event is dated: its start for fleet-started, its end for fleet-finished. */
export function fleetEventTime(record: FleetRecord): string {
  return record.phase === 'finished' ? (record.finishedAt ?? record.startedAt) : record.startedAt;
}
