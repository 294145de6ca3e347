// The demo's test bed: a fresh local cluster, a Git server holding bootstrap-manifests/baton-controller (or Flux's
// install), the controller's images on the bed's real node, audit keys and a plan that hands off to it. `pnpm bench:pulumi` hands
// off on the same bed, so the benchmark measures what the demo shows.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import { ensureControlPlaneBinaries, startDetachedCluster } from '@baton/testenv';
import {
  type ArgoCdSide,
  type BatonControllerSide,
  type FluxControllers,
  type FluxSide,
  type HandoffBed,
  startArgoCdBed,
  startFluxBed,
  startHandoffBed,
} from '@baton/testenv/beds';
import type { GitServer } from '@baton/testenv/git';
import { parse } from 'yaml';

const profileDir = (name: string) => fileURLToPath(new URL(`../../bootstrap-manifests/${name}`, import.meta.url));

/** Options of {@link startDemoBed}. */
export interface DemoBedOptions {
  /** Cluster name (also the Pulumi stack's name). */
  readonly name: string;
  /** Directory of the plan, the push set, the audit log and its keys. @default a new temp dir */
  readonly dir?: string;
  /** Run the cluster in a background host that outlives this process. @default false */
  readonly detached?: boolean;
}

/** Options of {@link startDemoBed} for Flux or Argo CD. */
export interface FluxDemoBedOptions extends DemoBedOptions {
  readonly profile: 'flux' | 'argocd';
  /** Progress of the controller's build (minutes on a cold machine). */
  readonly onBuildProgress?: (line: string) => void;
  /** The built controllers (build them before the cluster starts). @default built here */
  readonly controllers?: FluxControllers;
}

/**
 * Starts a handoff bed for baton-controller's profile (or real Flux's), with a fresh audit signing key.
 * @throws when the cluster, the Git server or the controllers cannot start; what started is stopped again.
 */
export function startDemoBed(o: DemoBedOptions): Promise<HandoffBed>;
export function startDemoBed(o: FluxDemoBedOptions): Promise<HandoffBed<FluxSide> | HandoffBed<ArgoCdSide>>;
export function startDemoBed(
  o: DemoBedOptions | FluxDemoBedOptions,
): Promise<HandoffBed | HandoffBed<FluxSide> | HandoffBed<ArgoCdSide>> {
  const common = {
    name: o.name,
    detached: o.detached ?? false,
    ...(o.dir === undefined ? {} : { dir: o.dir }),
    writeAuditKeys: (paths: { signingKeyPath: string; keysPath: string }) => writeSigningKeyPair(paths),
  };
  if ('profile' in o && o.profile === 'argocd')
    return startArgoCdBed({
      ...common,
      profileDir: profileDir('argocd'),
      ...(o.onBuildProgress ? { onBuildProgress: o.onBuildProgress } : {}),
    });
  if ('profile' in o)
    return startFluxBed({
      ...common,
      profileDir: profileDir('flux'),
      ...(o.onBuildProgress ? { onBuildProgress: o.onBuildProgress } : {}),
      ...(o.controllers ? { controllers: o.controllers } : {}),
    });
  return startHandoffBed({ ...common, profileDir: profileDir('baton-controller') });
}

/**
 * A bed that outlives the demo (`--keep`): `baton testenv up --bed`'s background host runs the cluster, the Git server
 * and the real node until `pnpm baton testenv down --name <name>`. The demo reads it from the files the host reports
 * (its plan, pull credential and webhook key), as a person following the handoff by hand would.
 * @throws when the host cannot start the bed (nothing is left running then).
 */
export async function startKeptDemoBed(o: {
  readonly name: string;
  readonly profile: 'baton-controller' | 'flux';
}): Promise<HandoffBed<BatonControllerSide>> {
  await ensureControlPlaneBinaries();
  const c = await startDetachedCluster({ name: o.name, bed: { profile: o.profile, manifests: profileDir(o.profile) } });
  const b = c.bed!;
  const credentials = parse(readFileSync(b.pullCredentialPath, 'utf8')) as { username: string; password: string };
  // What the demo's two paths ask of the Git server: the repository's URL and the reader's credentials.
  const git = { url: new URL(b.gitUrl).origin, credentials, repoUrl: () => b.gitUrl } as unknown as GitServer;
  const webhookSecretPath = join(b.dir, 'webhook.yaml');
  const side = {
    dir: b.dir,
    git,
    auditLogPath: b.auditLogPath,
    journalDir: join(b.dir, 'journal'),
    signingKeyPath: b.signingKeyPath,
    keysPath: b.keysPath,
    revision: b.revision,
    planPath: b.planPath,
    pushDir: b.pushDir,
    gitPath: b.gitPath,
    // The host does not report what it committed or pinned; the demo reads neither.
    files: {},
    images: {},
    pullCredentialPath: b.pullCredentialPath,
    secretValues: [credentials.password],
    controllerImage: b.controllerImage,
    ...(existsSync(webhookSecretPath) ? { webhookSecretPath } : {}),
    // The host owns the bed: `testenv down` stops it.
    stop: async () => {},
  } as BatonControllerSide;
  return {
    clusterName: c.name,
    server: c.server,
    kubeconfigPath: c.kubeconfigPath,
    apiserverAuditLogPath: c.auditLogPath,
    // The host holds the node; the demo reads nothing of its processes.
    realNode: null,
    side,
    stop: async () => {},
  };
}
