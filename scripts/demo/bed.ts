// The demo's test bed: a fresh local cluster, a Git server holding bootstrap-manifests/baton-controller (or Flux's
// install), the pod runner playing kubelet for the controller, audit keys and a plan that hands off to it. `pnpm bench:pulumi` hands
// off on the same bed, so the benchmark measures what the demo shows.
import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import {
  type ArgoCdSide,
  type FluxControllers,
  type FluxSide,
  type HandoffBed,
  startArgoCdBed,
  startFluxBed,
  startHandoffBed,
} from '@baton/testenv';

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
 * @throws when the cluster, the Git server or the pod runner cannot start; what started is stopped again.
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
