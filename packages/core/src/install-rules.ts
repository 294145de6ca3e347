// The install rules a manifest set must keep (what a push may create), and the controller image it must pin.
import { describeObject } from '@baton/kube/plan';
import type { HandoffPlan } from './handoff-plan.js';
import type { ManifestObject, ManifestSet } from './manifest.js';
import type { DeclaredObjects, Violations } from './manifest-violations.js';
import type { LoadedProfile } from './profile.js';

/** The profile must describe the plan's controller: same name, namespace and field manager. */
export function checkProfile({ file, profile }: LoadedProfile, plan: HandoffPlan, violations: Violations): void {
  if (profile.name !== plan.push.profile)
    violations.add(
      `${file} is profile ${profile.name}, but the plan's push.profile is ${plan.push.profile}; set push.profile: ${profile.name} or point takeover.profile at the ${plan.push.profile} profile`,
    );
  if (profile.namespace !== plan.controller.namespace)
    violations.add(
      `${file} runs the controller in namespace ${profile.namespace}, but the plan's controller.namespace is ${plan.controller.namespace}; make them equal`,
    );
  if (profile.fieldManagers.length > 0 && !profile.fieldManagers.includes(plan.controller.fieldManager))
    violations.add(
      `${file} says ${profile.name} applies as ${profile.fieldManagers.join(', ')}, but the plan's controller.fieldManager is ${plan.controller.fieldManager}; the takeover would never be seen: set controller.fieldManager: ${profile.fieldManagers[0]}`,
    );
}

/** No object twice; the only Namespace is the controller's; the only Secrets are the plan's; bindings stay inside. */
export function checkInstallRules(
  objects: readonly ManifestObject[],
  set: DeclaredObjects,
  plan: HandoffPlan,
  violations: Violations,
): void {
  const ns = plan.controller.namespace;
  const allowedSecrets = [plan.pull.credential.secretName, ...plan.push.secrets.map((x) => x.name)];
  const keys = new Set<string>();
  for (const m of objects) {
    const o = m.object;
    const id = describeObject(o);
    if (keys.has(id)) violations.refuse(m, 'is declared twice; keep one');
    keys.add(id);
    if (o.kind === 'Namespace' && o.metadata.name !== ns) {
      violations.refuse(m, `is refused: the only Namespace an install creates is the controller namespace ${ns}`);
    }
    if (o.kind === 'Secret' && !allowedSecrets.includes(o.metadata.name)) {
      violations.refuse(
        m,
        `is refused: the only Secrets an install carries are the pull credential and push.secrets (${allowedSecrets.join(', ')})`,
      );
    }
    if (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
      checkBinding(m, set, ns, plan.controller.privilege, violations);
    if (o.kind === 'Service') checkService(m, violations);
  }
}

/**
 * A binding binds only ServiceAccounts of the set to roles of the set, never an existing role; cluster-admin only
 * with the plan's `controller.privilege: cluster-admin`, as a ClusterRoleBinding.
 */
function checkBinding(
  m: ManifestObject,
  set: DeclaredObjects,
  ns: string,
  privilege: HandoffPlan['controller']['privilege'],
  violations: Violations,
): void {
  const b = m.object as unknown as {
    roleRef?: { kind?: string; name?: string };
    subjects?: { kind?: string; name?: string; namespace?: string }[];
  };
  const ref = b.roleRef;
  const isChosenClusterAdmin =
    privilege === 'cluster-admin' && m.object.kind === 'ClusterRoleBinding' && ref?.name === 'cluster-admin';
  if (!ref?.kind || !ref.name) violations.refuse(m, 'has no roleRef');
  else if (ref.kind === 'ClusterRole' && !set.has('ClusterRole', ref.name) && !isChosenClusterAdmin) {
    violations.refuse(
      m,
      ref.name === 'cluster-admin'
        ? 'binds ClusterRole cluster-admin, which the plan does not choose; remove the binding (the default), or set controller.privilege: cluster-admin in the plan to grant it deliberately (the audit event records the choice)'
        : `binds ClusterRole ${ref.name}, which is not part of the install; bind a ClusterRole declared in the manifest set`,
    );
  } else if (ref.kind === 'Role' && !set.has('Role', ref.name)) {
    violations.refuse(
      m,
      `binds Role ${ref.name}, which is not part of the install; bind a Role declared in the manifest set`,
    );
  }
  for (const s of b.subjects ?? []) {
    const isOwnSa =
      s.kind === 'ServiceAccount' && (s.namespace ?? ns) === ns && set.has('ServiceAccount', s.name ?? '');
    if (!isOwnSa) {
      violations.refuse(
        m,
        `binds ${ref?.kind ?? 'a role'} ${ref?.name ?? ''} to ${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}, which is not the controller's; remove it or bind the controller's own ServiceAccount`,
      );
    }
  }
  if ((b.subjects ?? []).length === 0) violations.refuse(m, 'has no subjects');
}

/** A pushed Service stays inside the cluster: ClusterIP, no external IPs (they can intercept other traffic). */
function checkService(m: ManifestObject, violations: Violations): void {
  const spec = (m.object as { spec?: { type?: string; externalIPs?: unknown[] } }).spec;
  if ((spec?.type ?? 'ClusterIP') !== 'ClusterIP')
    violations.refuse(
      m,
      `is refused: type ${spec?.type} exposes the cluster outside; an install pushes ClusterIP Services only (let the controller apply others from Git)`,
    );
  if ((spec?.externalIPs ?? []).length > 0)
    violations.refuse(m, 'is refused: externalIPs can capture traffic for other addresses; remove spec.externalIPs');
}

/** The controller's ServiceAccount and the pull credential are part of every install. */
export function checkRequiredObjects(set: DeclaredObjects, plan: HandoffPlan, violations: Violations): void {
  const ns = plan.controller.namespace;
  if (!set.has('ServiceAccount', plan.controller.serviceAccount)) {
    violations.add(
      `the manifest set has no ServiceAccount ${ns}/${plan.controller.serviceAccount} (controller.serviceAccount); add it`,
    );
  }
  if (!set.has('Secret', plan.pull.credential.secretName)) {
    violations.add(
      `the manifest set has no Secret ${ns}/${plan.pull.credential.secretName} (pull.credential.secretName); add the read-only pull credential`,
    );
  }
}

/**
 * The controller workload's image (its Deployment or StatefulSet), which must be pinned by digest so the audit record
 * names what ran; or, where the profile says upstream publishes no digest (`imagePinnedByTag`), by an exact release
 * tag (`:vX.Y.Z`), recorded with an empty digest.
 */
export function controllerImageOf(
  objects: readonly ManifestObject[],
  plan: HandoffPlan,
  violations: Violations,
  profile?: LoadedProfile,
): ManifestSet['controllerImage'] {
  const none = { image: '', digest: '' };
  const workload = objects.find(
    (m) =>
      (m.object.kind === 'Deployment' || m.object.kind === 'StatefulSet') &&
      m.object.metadata.name === plan.controller.name,
  );
  if (!workload) {
    violations.add(
      `the manifest set has no Deployment or StatefulSet ${plan.controller.namespace}/${plan.controller.name} (controller.name); add the controller`,
    );
    return none;
  }
  const image =
    ((workload.object as { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } }).spec?.template
      ?.spec?.containers ?? [])[0]?.image ?? '';
  const at = image.indexOf('@sha256:');
  if (at >= 0 && /^sha256:[0-9a-f]{64}$/.test(image.slice(at + 1)))
    return { image: image.slice(0, at), digest: image.slice(at + 1) };
  if (profile?.profile.imagePinnedByTag && /^[^@\s]+:v\d+\.\d+\.\d+$/.test(image)) return { image, digest: '' };
  violations.refuse(
    workload,
    `runs image "${image}", which is not pinned by digest; use <image>@sha256:<64 hex digits> so the audit record names what ran${profile?.profile.imagePinnedByTag ? ' (or, as the profile allows, an exact release tag <image>:vX.Y.Z)' : ''}`,
  );
  return none;
}
