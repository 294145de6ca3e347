import { HandoffOutcome } from '@baton/audit';
import {
  computeBootstrapRules,
  describeObject,
  flattenRules,
  type RevokeResult,
  removeBootstrapLeftover,
  scanBootstrapObjects,
} from '@baton/kube';
import { unfinishedRuns } from '../journal.js';
import { type ManifestSet, setDigest } from '../manifest-set.js';
import { type Receipt, readReceipt } from '../receipt.js';
import { checkTakeover } from '../takeover.js';
import type { Begun, Inspection, Scoped } from './phases.js';
import { appendPendingRecords } from './record.js';
import { completeKilledHandoff, mintedEntry, recordCrashedRuns } from './resume.js';
import type { HandoffRun } from './run.js';
import { summaryFrame, takeoverSummary } from './summary.js';
import { HandoffStep, type HandoffSummary } from './types.js';

/**
 * What the cluster says before anything is minted. Ends the run here, with a summary, when the cluster is already
 * handed off ("push is for install; pull is for operate": only re-checked), or an earlier run was killed after the
 * takeover (its record is completed; nothing is minted). Otherwise resolves the revision, removes what killed runs
 * left behind (only objects baton created; labelled decoys are reported), records them, and scopes the push.
 * @throws what the API, Git or the audit sink throws (the run then fails before minting).
 */
export async function inspectCluster(run: HandoffRun, begun: Begun): Promise<Inspection> {
  const { operator } = run.deps;
  const { plan } = run;
  const { set } = begun;
  await appendPendingRecords(run);
  const receipt = await readReceipt(operator, plan.batonNamespace);
  run.receipt = receipt;
  if (receipt?.outcome === HandoffOutcome.handedOff) return { ended: await recheckHandedOff(run, set, receipt) };

  await run.enter(HandoffStep.cleanup);
  const revision = plan.pull.source.revision ?? (await run.deps.resolveRevision(plan.pull.source));
  run.revision = revision;
  const listedAt = run.clock.now();
  const removedByRun = await removeLeftovers(run);
  // A run killed after the controller took over (during takeover's last poll, revoke, prove or record) left a
  // handed-off cluster without a receipt. Only where a run may have been killed (no receipt, leftovers, or a
  // journaled credential never finished): after a run that ended failed, a controller that became ready later is
  // handed off anew, with a provable credential.
  const mayBeKilled =
    receipt === undefined ||
    removedByRun.size > 0 ||
    unfinishedRuns(run.journal).some((r) => r.runId !== run.runId && mintedEntry(r) !== undefined);
  const found = mayBeKilled ? await checkTakeover(operator, plan, set, revision) : undefined;
  if (found?.isComplete) {
    run.takeover = found;
    return { ended: await completeKilledHandoff(run, found, removedByRun, listedAt, revision) };
  }
  await recordCrashedRuns(run, removedByRun, revision);
  const scoped = skipWhatPullOwns(run, begun, revision, found ?? (await checkTakeover(operator, plan, set, revision)));
  run.fact(
    `revision ${revision.slice(0, 12)}; ${run.leftoversRemoved.length > 0 ? `${run.leftoversRemoved.length} leftover objects removed` : 'nothing left behind'}`,
  );
  // A signal during preflight or cleanup stops the run before any credential exists.
  run.signal.throwIfAborted();
  return { scoped };
}

/**
 * On a cluster whose controller already owns pushed objects (a run before this one ended failed, or tampered and
 * repaired, after the controller took over): what pull owns is never pushed again ("push is for install; pull is for
 * operate"), and pushing it would conflict with the controller's fields. The run pushes only the rest (the push-only
 * objects, its Secrets among them, and anything not owned yet), confined to exactly that, so its credential is still
 * minted, confined, revoked and proven, and the takeover is checked over the whole set. Nothing owned: the whole set.
 */
function skipWhatPullOwns(
  run: HandoffRun,
  { set, rules }: Begun,
  revision: string,
  state: { readonly ownedObjects: readonly string[] },
): Scoped {
  const whole: Scoped = { set, toPush: set, rules, revision };
  if (state.ownedObjects.length === 0) return whole;
  const owned = new Set(state.ownedObjects);
  const objects = set.objects.filter((m) => !owned.has(describeObject(m.object)));
  if (objects.length === 0 || objects.length === set.objects.length) return whole;
  const part = computeBootstrapRules(
    objects.map((m) => m.object),
    set.objects.map((m) => m.object),
  );
  // The credential's rules, as the summary and the record report them.
  run.rules = part;
  run.log.info(
    { pushed: objects.length, owned: owned.size, rules: flattenRules(part).length },
    'the controller already owns part of the set: pushing only the rest',
  );
  return { set, toPush: { ...set, objects, digest: setDigest(objects) }, rules: part, revision };
}

async function recheckHandedOff(run: HandoffRun, set: ManifestSet, receipt: Receipt): Promise<HandoffSummary> {
  const state = await checkTakeover(run.deps.operator, run.plan, set, receipt.revision);
  run.log.info({ receiptRunId: receipt.runId, healthy: state.isComplete }, 'cluster already handed off');
  return {
    ...summaryFrame(run),
    outcome: 'already-handed-off',
    ...(state.isComplete
      ? {}
      : { failedStep: 'takeover', error: `cluster was handed off by run ${receipt.runId}, but ${state.reason}` }),
    revision: receipt.revision,
    totalSeconds: run.elapsedSeconds(),
    takeover: takeoverSummary(state),
  };
}

async function removeLeftovers(run: HandoffRun): Promise<Map<string, RevokeResult>> {
  const { operator } = run.deps;
  const scan = await scanBootstrapObjects(operator, run.plan.batonNamespace);
  if (scan.suspicious.length > 0) {
    run.suspicious.push(...scan.suspicious);
    run.log.warn(
      { suspicious: scan.suspicious },
      'objects carry the bootstrap labels but were not created by baton; left alone',
    );
  }
  const removed = new Map<string, RevokeResult>();
  for (const left of scan.leftovers) {
    const r = await removeBootstrapLeftover(operator, left, () => run.clock.now());
    removed.set(left.runId, r);
    run.leftoversRemoved.push(...r.deleted);
    run.log.warn(
      { leftoverRunId: left.runId, deleted: r.deleted.length },
      'removed bootstrap leftovers of an earlier run',
    );
  }
  return removed;
}
