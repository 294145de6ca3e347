// The demo's test bed: a fresh local cluster, a Git server holding bootstrap-manifests/baton-controller, the pod
// runner playing kubelet for the controller, audit keys and a plan that hands off to it. `pnpm bench:pulumi` hands
// off on the same bed, so the benchmark measures what the demo shows.
import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import { type HandoffBed, startHandoffBed } from '@baton/testenv';

const PROFILE = fileURLToPath(new URL('../../bootstrap-manifests/baton-controller', import.meta.url));

/** Options of {@link startDemoBed}. */
export interface DemoBedOptions {
  /** Cluster name (also the Pulumi stack's name). */
  readonly name: string;
  /** Directory of the plan, the push set, the audit log and its keys. @default a new temp dir */
  readonly dir?: string;
  /** Run the cluster in a background host that outlives this process. @default false */
  readonly detached?: boolean;
}

/**
 * Starts a handoff bed for baton-controller's profile, with a fresh audit signing key.
 * @throws when the cluster, the Git server or the pod runner cannot start; what started is stopped again.
 */
export function startDemoBed(o: DemoBedOptions): Promise<HandoffBed> {
  return startHandoffBed({
    name: o.name,
    detached: o.detached ?? false,
    profileDir: PROFILE,
    ...(o.dir === undefined ? {} : { dir: o.dir }),
    writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-demo' }),
  });
}
