import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import { type LoadedPlan, loadHandoffPlan } from '@baton/core';
import type { RealNodeInfo } from '@baton/testenv';
import { type BatonControllerSide, startBatonControllerSide } from '@baton/testenv/beds';

/** bootstrap-manifests/baton-controller: what the push installs and Git carries. */
export const BATON_CONTROLLER_PROFILE = fileURLToPath(
  new URL('../../../bootstrap-manifests/baton-controller', import.meta.url),
);

/** A plan that hands a cluster to baton's own controller, its Git repository, and what runs its Pod. */
export interface BatonControllerEnv extends BatonControllerSide {
  readonly loaded: LoadedPlan;
}

/** testenv's {@link startBatonControllerSide} for an existing cluster, with a fresh audit key and the loaded plan. */
export async function createBatonControllerEnv(o: {
  kubeconfigPath: string;
  clusterName?: string;
  /** The cluster's real node: the controller runs there as a container kubelet pulled by the pinned digest. */
  realNode: RealNodeInfo | null;
  /** Directory for the plan and its files. @default a new temp dir */
  dir?: string;
}): Promise<BatonControllerEnv> {
  const side = await startBatonControllerSide({
    ...o,
    profileDir: BATON_CONTROLLER_PROFILE,
    writeAuditKeys: (paths) => writeSigningKeyPair(paths),
  });
  return { ...side, loaded: loadHandoffPlan(side.planPath) };
}
