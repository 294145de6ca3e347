import { ConfinementError, KubeApiError, TimeoutError } from '@baton/errors';
import {
  bootstrapRefFor,
  clientsFromToken,
  clientsImpersonating,
  diffEffectiveRules,
  expectedObjects,
  installConfinement,
  type KubeClients,
  type KubeObject,
  mintBootstrapIdentity,
  planConfinement,
  probeConfinement,
  statusOf,
} from '@baton/kube';
import { pollUntil } from '../clock.js';
import type { ManifestSet } from '../manifest-set.js';
import { fullFingerprint } from './fingerprint.js';
import type { Confined, Minted, Scoped } from './phases.js';
import { createNamespaceIfAbsent } from './preflight.js';
import { type ConfinementState, type HandoffRun, safeError } from './run.js';
import { HandoffStep } from './types.js';

/**
 * Confines the identity the run is about to mint, before it exists: its username is known from the run id. With the
 * operator's credential: creates the install's namespace (so the scoped Role has somewhere to live), asks the API
 * server what each planned object will hold once applied (dry run), and installs a ValidatingAdmissionPolicy that
 * denies that username every write but exactly those objects. Installing it before the mint keeps the policy's start
 * (its informers, its CEL compilation) out of the credential's live window.
 * @throws {ConfinementError} when the policy cannot be installed (nothing is minted or pushed).
 */
export async function confine(run: HandoffRun, scoped: Scoped): Promise<Confined> {
  const { operator } = run.deps;
  const { plan } = run;
  const set = scoped.toPush;
  const ref = bootstrapRefFor(run.runId, plan.batonNamespace, scoped.rules);
  await run.enter(HandoffStep.confine, { policy: ref.name });
  await ensureNamespaces(operator, set);
  const objects = await expectedObjects(
    operator,
    set.objects.map((m) => m.object),
    {
      fieldManager: plan.push.fieldManager,
      force: run.repairOf !== undefined,
      wholeSet: scoped.set.objects.map((m) => m.object),
      signal: run.signal,
    },
  );
  const plannedConfinement = planConfinement({
    name: ref.name,
    runId: run.runId,
    username: `system:serviceaccount:${ref.namespace}:${ref.name}`,
    planDigest: set.digest,
    fieldManager: plan.push.fieldManager,
    objects,
  });
  // Noted before the install: a half-installed confinement (policy without binding) is removed like a whole one.
  const confinement: ConfinementState = { plan: plannedConfinement, expected: objects, probeDenied: false };
  run.confinement = confinement;
  await installConfinement(operator, plannedConfinement);
  confinement.installedAt = run.clock.now();
  run.fact(`${plannedConfinement.allowed.length} objects allowed by ${plannedConfinement.name}`);
  run.log.info(
    {
      policy: plannedConfinement.name,
      planDigest: plannedConfinement.planDigest,
      validations: plannedConfinement.validationCount,
    },
    'confined the bootstrap identity to the plan',
  );
  return { ...scoped, confinement, ref };
}

// Roles live in namespaces: the operator creates the install's namespace so the scoped Role can be bound in it.
async function ensureNamespaces(operator: KubeClients, set: ManifestSet): Promise<void> {
  for (const m of set.objects) {
    if (m.object.kind !== 'Namespace') continue;
    const name = m.object.metadata.name;
    try {
      await operator.core.readNamespace({ name });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      await createNamespaceIfAbsent(operator, name, 'baton-mint');
    }
  }
}

/**
 * Mints the throwaway identity (ServiceAccount, Secret-bound 600 s token, the computed RBAC), journals its facts
 * (never the token) and starts the push-window budget, counted from the token's issue.
 * @throws {KubeApiError} naming the object that could not be created (the run revokes what exists).
 */
export async function mint(run: HandoffRun, confined: Confined): Promise<Minted> {
  const { operator } = run.deps;
  const { plan, clock } = run;
  const { ref } = confined;
  // Noted before the TokenRequest: a token whose answer is lost must still be revoked.
  run.ref = ref;
  await run.enter(HandoffStep.mint, {
    name: ref.name,
    namespace: ref.namespace,
    roleNamespaces: ref.roleNamespaces,
    revision: confined.revision,
  });
  const identity = await mintBootstrapIdentity(operator, {
    runId: run.runId,
    namespace: plan.batonNamespace,
    rules: confined.rules,
    now: () => clock.now(),
    beforeToken: (username) => awaitConfinementActive(run, confined, username),
  });
  run.identity = identity;
  run.issuedMs = clock.monotonicMs();
  await run.journal.write(run.runId, 'minted', clock.now(), {
    fingerprint: fullFingerprint(identity.token),
    jti: identity.jti,
    subject: identity.username,
    issuedAt: identity.issuedAt.toISOString(),
    expiresAt: identity.expiresAt.toISOString(),
    name: identity.name,
    namespace: identity.namespace,
    secretUid: identity.secretUid,
    audiences: identity.audiences,
  });
  run.log.info(
    { subject: identity.username, jti: identity.jti, expiresAt: identity.expiresAt.toISOString() },
    'minted bootstrap credential',
  );
  run.fact(`${identity.username.split(':').at(-1)}, token until ${identity.expiresAt.toISOString()}`);
  run.startBudget();
  return { ...confined, identity, bootstrap: clientsFromToken(operator, identity.token) };
}

/**
 * Before the token exists: waits until the confinement denies the identity a write outside the plan, asking as the
 * identity through the operator's impersonation (no token needed), so the policy's start (informers, CEL
 * compilation) and the RBAC caches are not in the token's live window. The proof that counts is the probe with the
 * token itself (scope check); this wait only moves the waiting out of the window. An operator who may not
 * impersonate skips it.
 */
async function awaitConfinementActive(run: HandoffRun, confined: Confined, username: string): Promise<void> {
  const c = confined.confinement;
  const as = clientsImpersonating(run.deps.operator, username);
  const t0 = run.clock.monotonicMs();
  try {
    await pollUntil(
      async () => {
        const p = await probeConfinement(as, c.plan, run.plan.controller.namespace, probeLike(run, confined));
        if (p.status === 403 && !p.denied && p.message.includes('cannot impersonate')) return 'no-impersonation';
        return p.denied ? 'active' : undefined;
      },
      {
        clock: run.clock,
        intervalMs: 50,
        timeoutMs: run.deps.confinementTimeoutMs ?? 10_000,
        what: 'the confinement active',
        signal: run.signal,
      },
    );
  } catch (err) {
    // Not fatal here: the probe with the token decides, and fails the run closed.
    run.log.warn(
      { err: safeError(err) },
      'the confinement was not seen active before the token; the token probe decides',
    );
  }
  c.activeWaitMs = Math.round(run.clock.monotonicMs() - t0);
}

// A push without a ServiceAccount in the controller's namespace (a repair's, or only what pull does not own) gives RBAC
// no ServiceAccount create there for the usual probe: it probes with its first namespaced kind that RBAC lets it
// create as such (a Role or RoleBinding would be refused for escalation before admission sees it).
const RBAC_KINDS = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];
function probeLike(run: HandoffRun, { toPush }: Scoped): KubeObject | undefined {
  const objects = toPush.objects.map((m) => m.object);
  const ns = run.plan.controller.namespace;
  if (objects.some((o) => o.kind === 'ServiceAccount' && o.metadata.namespace === ns)) return undefined;
  return objects.find((o) => o.metadata.namespace && !RBAC_KINDS.includes(o.kind));
}

const BAD_CREDENTIAL = 'the throwaway credential holds rules the plan did not compute';

/**
 * Checks the credential before it writes anything: its effective RBAC rules (SelfSubjectRulesReview as the token)
 * are exactly the computed ones, and the confinement denies it a write outside the plan (a dry-run create of an
 * unplanned ServiceAccount, which RBAC allows). Either failing stops the run before the push: it fails closed.
 * @throws {KubeApiError} when the rules differ. @throws {ConfinementError} when the probe is not denied in time.
 */
export async function scopeCheck(run: HandoffRun, minted: Minted): Promise<void> {
  const { plan } = run;
  const { bootstrap, confinement: c } = minted;
  await run.enter(HandoffStep.scopeCheck);
  const diffs = await diffEffectiveRules(bootstrap, minted.rules, [
    plan.controller.namespace,
    plan.batonNamespace,
    'default',
    'kube-system',
  ]);
  const bad = diffs.filter((d) => d.extra.length > 0 || d.missing.length > 0 || d.isIncomplete);
  const [d] = bad;
  if (d) {
    throw new KubeApiError(
      `${BAD_CREDENTIAL} (or lacks some): in namespace ${d.namespace} extra [${d.extra.slice(0, 5).join(', ')}] missing [${d.missing.slice(0, 5).join(', ')}]; a binding to system:serviceaccounts or system:authenticated widens every ServiceAccount: remove it, then rerun`,
      { details: { diffs: bad } },
    );
  }
  let last = 0;
  const probeStart = run.clock.monotonicMs();
  try {
    await pollUntil(
      async () => {
        const p = await probeConfinement(bootstrap, c.plan, plan.controller.namespace, probeLike(run, minted));
        last = p.status;
        return p.denied ? p : undefined;
      },
      {
        clock: run.clock,
        intervalMs: 50,
        timeoutMs: run.deps.confinementTimeoutMs ?? 10_000,
        what: 'the confinement denying a write outside the plan',
        signal: run.signal,
      },
    );
  } catch (err) {
    if (!(err instanceof TimeoutError)) throw err;
    throw new ConfinementError(
      `the confinement ${c.plan.name} did not deny a probe write outside the plan within ${Math.round((run.deps.confinementTimeoutMs ?? 10_000) / 1000)} s (last answer HTTP ${last}); nothing was pushed and the credential is revoked; check that no other admission configuration disables ValidatingAdmissionPolicy, then rerun`,
      { cause: err },
    );
  }
  c.probeDenied = true;
  c.probeMs = Math.round(run.clock.monotonicMs() - probeStart);
  run.fact('rules exact; a write outside the plan denied');
  run.log.info({ policy: c.plan.name }, 'the confinement denied a write outside the plan');
  run.signal.throwIfAborted();
}
