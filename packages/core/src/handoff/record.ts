import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { HandoffRecord } from '@baton/audit';
import type { KubeClients, RbacRule } from '@baton/kube';
import type { AuditAppendResult } from '../audit-sink.js';
import { pendingRecords } from '../journal.js';
import { writeReceipt } from '../receipt.js';
import type { Ending, RecordOutcome } from './phases.js';
import { type HandoffRun, safeError, type TamperingState } from './run.js';
import { credentialSummary, tamperingSummary } from './summary.js';
import type { RepairSummary } from './types.js';
import { blamedStepOf, errorOf, outcomeOf } from './verdict.js';

/**
 * Appends the run's audit event, journals that it did (a run killed before its receipt is completed by the next
 * one, which must not record it twice), then writes the receipt. A failure is returned (the outcome becomes failed),
 * never thrown. Without a revision there is nothing to record against.
 * @param ending what revoke, prove and the repair did: the record holds it.
 */
export async function recordRun(run: HandoffRun, ending: Ending): Promise<RecordOutcome> {
  if (!run.revision) return {};
  let record: HandoffRecord | undefined;
  let audit: AuditAppendResult;
  try {
    record = handoffRecord(run, ending);
    audit = await run.deps.audit.append(record);
  } catch (err) {
    run.log.error({ err: safeError(err) }, 'could not append the audit event');
    // The record is secret-free: the journal keeps it, and the next run appends it (see appendPendingRecords).
    const kept = record !== undefined && (await run.journalSafely('record-pending', { record }));
    return {
      failure: `record failed: ${safeError(err)}${kept ? `; the event is kept in the journal ${run.journal.path} and the next baton up appends it` : ''}`,
    };
  }
  const failure = await finishRecord(run, record, audit, run.runId);
  return failure ? { audit, failure } : { audit };
}

/**
 * After an append: journals that it happened (a run killed before its receipt is completed by the next one, which
 * must not record it twice), then writes the receipt for `runId`. Returns why this run's receipt was not written.
 * @throws what the receipt write throws, for an earlier run's event.
 */
async function finishRecord(
  run: HandoffRun,
  record: HandoffRecord,
  audit: AuditAppendResult,
  runId: string,
): Promise<string | undefined> {
  await run.journalSafely(
    'recorded',
    {
      outcome: record.outcome,
      revokedAt: record.credential?.revokedAt ?? null,
      revocationProven: record.revocation !== undefined && !record.revocation.tokenReview.authenticated,
      audit,
    },
    runId,
  );
  try {
    await writeReceipt(
      run.deps.operator,
      run.plan.batonNamespace,
      {
        runId,
        outcome: record.outcome,
        revision: record.plan.pull.source.revision,
        recordedAt: run.clock.now().toISOString(),
        credentialFingerprint: record.credential?.fingerprint ?? '',
        ...receiptAuditFields(audit),
      },
      run.clock.now(),
    );
    run.log.info({ auditIndex: audit.index, eventId: audit.eventId, recordedRunId: runId }, 'recorded handoff');
    if (runId === run.runId) run.fact(`audit event #${audit.index}; receipt written`);
    return undefined;
  } catch (err) {
    run.log.error({ err: safeError(err) }, 'could not write the receipt');
    if (runId === run.runId) return `record failed: ${safeError(err)}`;
    throw err;
  }
}

/**
 * Appends the events earlier runs could not (their audit log was full or read-only) and kept in the journal, each
 * once, and writes their receipts, before this run looks at the cluster.
 * @throws what the audit sink or the receipt write throws (the run then fails before minting).
 */
export async function appendPendingRecords(run: HandoffRun): Promise<void> {
  for (const { runId, record } of pendingRecords(run.journal)) {
    const audit = await run.deps.audit.append(record as HandoffRecord);
    run.log.warn({ pendingRunId: runId, auditIndex: audit.index }, 'appended an audit event an earlier run could not');
    await finishRecord(run, record as HandoffRecord, audit, runId);
  }
}

/** The run's audit record (the in-toto predicate), as it ended. */
export function handoffRecord(run: HandoffRun, ending: Ending): HandoffRecord {
  const credential = credentialSummary(run, ending);
  const step = blamedStepOf(run, ending);
  const error = errorOf(run, ending);
  const { revoked } = ending.revoke;
  const { proof } = ending.proof;
  return {
    runId: run.runId,
    ...recordFrame(run, run.revision ?? ''),
    outcome: outcomeOf(run, ending),
    ...(step ? { failedStep: step } : {}),
    ...(error ? { error: error.slice(0, 2000) } : {}),
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.clock.now().toISOString(),
    ...(run.identity && credential
      ? {
          credential: {
            kind: 'serviceaccount-token' as const,
            fingerprint: credential.fingerprint,
            ...(run.identity.jti ? { jti: run.identity.jti } : {}),
            subject: run.identity.username,
            audiences: [...run.identity.audiences],
            boundObject: {
              kind: 'Secret' as const,
              namespace: run.identity.namespace,
              name: run.identity.name,
              uid: run.identity.secretUid,
            },
            rbacRules: recordRules(credential.rules),
            issuedAt: credential.issuedAt,
            expiresAt: credential.expiresAt,
            revokedAt: credential.revokedAt,
            liveSeconds: credential.liveSeconds,
            ...(credential.writeWindowSeconds !== undefined
              ? { writeWindowSeconds: credential.writeWindowSeconds }
              : {}),
            ...(credential.privilegeWindowSeconds !== undefined
              ? { privilegeWindowSeconds: credential.privilegeWindowSeconds }
              : {}),
          },
        }
      : {}),
    ...confinementRecord(run),
    ...(run.takeover?.isComplete && run.controllerReadyAt
      ? {
          readiness: {
            controllerReadyAt: run.controllerReadyAt.toISOString(),
            reconciledRevision: run.revision ?? '',
            ownedObjectCount: run.takeover.ownedObjects.length,
            ownedObjects: run.takeover.ownedObjects.slice(0, 64),
          },
        }
      : {}),
    ...(run.tampering ? { tampering: tamperingRecord(run.tampering) } : {}),
    ...(proof && revoked
      ? {
          revocation: {
            method: 'bound-object-deleted' as const,
            ...(revoked.secret ? { deletedObject: { kind: 'Secret', ...revoked.secret } } : {}),
            tokenReview: { authenticated: proof.review.authenticated, checkedAt: proof.provedAt.toISOString() },
            directRequest: { statusCode: proof.probeStatus, checkedAt: proof.revokedAt.toISOString() },
          },
        }
      : {}),
    stepDurationsMs: Object.fromEntries(Object.entries(run.durations).map(([k, v]) => [k, Math.max(0, Math.round(v))])),
  };
}

/** The audit record's view of a rewrite and its repair (the summary's, without the note). */
function tamperingRecord(t: TamperingState): NonNullable<HandoffRecord['tampering']> {
  const s = tamperingSummary(t);
  return {
    detectedBy: s.detectedBy,
    detectedAt: s.detectedAt,
    objects: s.objects.slice(0, 64).map((o) => ({ object: o.object, fields: o.fields.slice(0, 16) })),
    ...(s.repair ? { repair: repairRecord(s.repair) } : {}),
  };
}

function repairRecord(r: RepairSummary): NonNullable<NonNullable<HandoffRecord['tampering']>['repair']> {
  const { note: _note, credential, ...rest } = r;
  return {
    ...rest,
    ...(credential ? { credential: { ...credential } } : {}),
    repushed: r.repushed.slice(0, 64),
    restarted: r.restarted.slice(0, 64),
    stopped: r.stopped.slice(0, 64),
  };
}

function confinementRecord(run: HandoffRun): Pick<HandoffRecord, 'confinement'> {
  const c = run.confinement;
  if (!c?.installedAt) return {};
  return {
    confinement: {
      method: 'validating-admission-policy',
      policyName: c.plan.name,
      planDigest: c.plan.planDigest,
      allowedObjectCount: c.plan.allowed.length,
      allowedObjects: c.plan.allowed.slice(0, 64),
      probeDenied: c.probeDenied,
      installedAt: c.installedAt.toISOString(),
      closedAt: c.closedAt?.toISOString() ?? null,
      removedAt: c.removedAt?.toISOString() ?? null,
    },
  };
}

/** The parts of a record every run of this plan shares: cluster, actor, declared plan. */
export function recordFrame(run: HandoffRun, rev: string): Pick<HandoffRecord, 'cluster' | 'actor' | 'plan'> {
  const { plan, deps } = run;
  const set = run.set;
  return {
    cluster: { name: plan.cluster.name, server: deps.operator.server, ...caFingerprint(deps.operator) },
    actor: {
      user: `${deps.actor.user}${run.operatorName ? ` (${run.operatorName})` : ''}`.slice(0, 253),
      host: deps.actor.host,
      via: deps.actor.via,
      ...(deps.actor.fleetRunId ? { fleetRunId: deps.actor.fleetRunId } : {}),
    },
    plan: {
      push: {
        profile: plan.push.profile,
        bundleDigest: set?.digest ?? '',
        objectCount: set?.objects.length ?? 0,
        ...(set?.profile ? { profileDigest: set.profile.digest } : {}),
        controller: {
          name: plan.controller.name,
          namespace: plan.controller.namespace,
          image: set?.controllerImage.image ?? '',
          ...(set?.controllerImage.digest ? { imageDigest: set.controllerImage.digest } : {}),
        },
        ...(run.images
          ? {
              images: {
                verification: run.images.verification,
                verified: run.images.verified.map(({ image, digest, signedBy, provenance }) => ({
                  image,
                  digest,
                  signedBy,
                  ...(provenance ? { provenance } : {}),
                })),
                ...(run.images.unsigned
                  ? { unsigned: run.images.unsigned.map(({ image, digest, reason }) => ({ image, digest, reason })) }
                  : {}),
              },
            }
          : {}),
      },
      pull: {
        source: { url: plan.pull.source.url, ref: plan.pull.source.ref, revision: rev, path: plan.pull.source.path },
        serviceAccount: { namespace: plan.controller.namespace, name: plan.controller.serviceAccount },
        privilege: plan.controller.privilege,
      },
    },
  };
}

/** Where the receipt points in the audit log. */
export function receiptAuditFields(a: AuditAppendResult) {
  return {
    auditEventId: a.eventId,
    auditEventDigest: a.eventDigest,
    auditLogIndex: String(a.index),
    auditCheckpoint: a.checkpoint,
  };
}

/** Rules in the audit record's shape (mutable arrays, at most 64). */
export function recordRules(rules: readonly RbacRule[]): NonNullable<HandoffRecord['credential']>['rbacRules'] {
  return rules.slice(0, 64).map((r) => ({
    ...(r.namespace ? { namespace: r.namespace } : {}),
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
    ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}),
  }));
}

/**
 * `{ caFingerprint: sha256:<64 hex> }` of the API server CA certificate (DER), or nothing when the kubeconfig names no
 * CA (the system trust store vouches for the server): a hash of no certificate would look like a real one.
 */
export function caFingerprint(c: Pick<KubeClients, 'caData' | 'kc'>): { caFingerprint?: string } {
  let pem = c.caData ? Buffer.from(c.caData, 'base64').toString('utf8') : '';
  const caFile = c.kc.getCurrentCluster()?.caFile;
  if (!pem && caFile) pem = readFileSync(caFile, 'utf8');
  const b64 = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  if (!b64) return {};
  return { caFingerprint: `sha256:${createHash('sha256').update(Buffer.from(b64, 'base64')).digest('hex')}` };
}
