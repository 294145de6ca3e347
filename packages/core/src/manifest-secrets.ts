// The Secrets of a manifest set: those the plan declares from files, and those its workloads cannot start without.
import { readFileSync } from 'node:fs';
import { ConfigError } from '@baton/errors';
import type { KubeObject } from '@baton/kube/plan';
import { parse } from 'yaml';
import type { HandoffPlan } from './handoff-plan.js';
import type { ManifestObject } from './manifest.js';
import type { Violations } from './manifest-violations.js';
import type { SecretRef } from './profile.js';

/** The pod template fields that name a Secret the pod cannot start without (unless `optional: true`). */
interface PodTemplateSecrets {
  readonly containers?: readonly SecretReadingContainer[];
  readonly initContainers?: readonly SecretReadingContainer[];
  readonly volumes?: readonly {
    name?: string;
    secret?: { secretName?: string; optional?: boolean };
    projected?: { sources?: readonly { secret?: { name?: string; optional?: boolean } }[] };
  }[];
}

interface SecretReadingContainer {
  readonly name?: string;
  readonly env?: readonly {
    name?: string;
    valueFrom?: { secretKeyRef?: { name?: string; key?: string; optional?: boolean } };
  }[];
  readonly envFrom?: readonly { secretRef?: { name?: string; optional?: boolean } }[];
}

/**
 * Every Secret a pushed workload needs to start (env `secretKeyRef`, `envFrom`, secret and projected volumes, unless
 * optional) is one the push creates, with the key read: otherwise the pod waits in CreateContainerConfigError on a
 * real node and the takeover only times out. Checked before anything is created.
 */
export function checkSecretReferences(
  objects: readonly ManifestObject[],
  violations: Violations,
  refs: readonly SecretRef[],
): void {
  const secrets = new Map(
    objects.filter((m) => m.object.kind === 'Secret').map((m) => [m.object.metadata.name, secretKeys(m.object)]),
  );
  const fix =
    'declare it in the plan (push.secrets: a file with its keys; with Pulumi, the pushSecrets input or stack config), or mark the reference optional: true';
  for (const m of objects) {
    for (const { name, via, key, isController } of requiredSecrets(m.object, refs)) {
      const keys = secrets.get(name);
      const stalls = isController ? 'so the controller would stall on it' : 'so its pod would never start';
      if (!keys)
        violations.refuse(m, `needs Secret ${name} (${via}), which the push does not create, ${stalls}; ${fix}`);
      else if (key !== undefined && !(key in keys))
        violations.refuse(
          m,
          `needs key ${key} of Secret ${name} (${via}), which the push creates without it (keys: ${Object.keys(keys).join(', ') || 'none'}); add ${key} to the Secret's file`,
        );
    }
  }
}

/**
 * The Secrets the set's workloads cannot start without (non-optional references), each with the keys its env reads
 * (none for a Secret read whole, through `envFrom` or a volume), and those the profile's `secretRefs` name (a
 * GitSync's webhook Secret): what a plan must push. `baton init` writes them.
 */
export function secretsReadByWorkloads(
  objects: readonly KubeObject[],
  refs: readonly SecretRef[] = [],
): { name: string; keys: string[] }[] {
  const out = new Map<string, Set<string>>();
  for (const o of objects) {
    for (const { name, key } of requiredSecrets(o, refs)) {
      const keys = out.get(name) ?? new Set<string>();
      if (key) keys.add(key);
      out.set(name, keys);
    }
  }
  return [...out].map(([name, keys]) => ({ name, keys: [...keys].sort() }));
}

/**
 * The Secrets (and keys) an object needs: a workload's pods their non-optional references; an object of a kind the
 * profile's `secretRefs` name, the Secret in that field (`isController`: the controller reads it, not a pod).
 */
function requiredSecrets(o: KubeObject, refs: readonly SecretRef[] = []): SecretNeed[] {
  return [...controllerSecrets(o, refs), ...podSecrets(o)];
}

interface SecretNeed {
  readonly name: string;
  readonly via: string;
  readonly key?: string;
  readonly isController?: boolean;
}

/** The Secrets the profile's `secretRefs` name in `o`'s fields (non-optional ones). */
function controllerSecrets(o: KubeObject, refs: readonly SecretRef[]): SecretNeed[] {
  const out: SecretNeed[] = [];
  for (const ref of refs.filter((r) => r.kind === o.kind && !r.optional)) {
    const name = ref.field.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);
    if (typeof name !== 'string' || !name) continue;
    if (ref.keys.length === 0) out.push({ name, via: ref.field, isController: true });
    for (const key of ref.keys) out.push({ name, via: ref.field, key, isController: true });
  }
  return out;
}

/** The Secrets (and keys) a workload's pods cannot start without: their non-optional references. */
function podSecrets(o: KubeObject): SecretNeed[] {
  const out: SecretNeed[] = [];
  if (o.kind !== 'Deployment' && o.kind !== 'StatefulSet') return out;
  const pod = (o as { spec?: { template?: { spec?: PodTemplateSecrets } } }).spec?.template?.spec ?? {};
  const need = (ref: { optional?: boolean } | undefined, name: string | undefined, via: string, key?: string) => {
    if (ref && !ref.optional && name) out.push({ name, via, ...(key === undefined ? {} : { key }) });
  };
  for (const c of [...(pod.containers ?? []), ...(pod.initContainers ?? [])]) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      need(ref, ref?.name, `env ${e.name} of container ${c.name}`, ref?.key ?? '');
    }
    for (const e of c.envFrom ?? []) need(e.secretRef, e.secretRef?.name, `envFrom of container ${c.name}`);
  }
  for (const v of pod.volumes ?? []) {
    need(v.secret, v.secret?.secretName, `volume ${v.name}`);
    for (const src of v.projected?.sources ?? []) need(src.secret, src.secret?.name, `projected volume ${v.name}`);
  }
  return out;
}

export function secretKeys(o: KubeObject): Record<string, string> {
  const keys = [...Object.keys((o.data as object) ?? {}), ...Object.keys((o.stringData as object) ?? {})];
  return Object.fromEntries(keys.sort().map((k) => [k, '']));
}

/**
 * The Secrets the plan declares from files (the pull credential's `fromFile` and `push.secrets`): created by the
 * push in the controller namespace, never stored in Git.
 * @throws {ConfigError} naming the file (never its content) when it is unreadable or not a map of strings.
 */
export function planSecrets(plan: HandoffPlan): ManifestObject[] {
  const specs = [
    ...(plan.pull.credential.fromFile
      ? [
          {
            name: plan.pull.credential.secretName,
            fromFile: plan.pull.credential.fromFile,
            field: 'pull.credential.fromFile',
            labels: plan.pull.credential.labels,
            profileData: plan.pull.credential.profileData,
          },
        ]
      : []),
    ...plan.push.secrets.map((x, i) => ({ ...x, field: `push.secrets[${i}].fromFile` })),
  ];
  return specs.map((x) => {
    let data: unknown;
    try {
      data = parse(readFileSync(x.fromFile, 'utf8'), { version: '1.1' });
    } catch (err) {
      throw new ConfigError(
        `${x.field}: cannot read ${x.fromFile} (${(err as NodeJS.ErrnoException).code ?? 'not YAML'}); give a YAML map of key: value`,
        {
          cause: err,
        },
      );
    }
    if (data === null || typeof data !== 'object' || Object.values(data).some((v) => typeof v !== 'string')) {
      throw new ConfigError(`${x.field}: ${x.fromFile} must be a YAML map of key: string value`);
    }
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: x.name, ...('labels' in x && x.labels ? { labels: x.labels } : {}) },
      type: 'Opaque',
      // The profile's keys first: the file's own win.
      stringData: { ...('profileData' in x ? x.profileData : {}), ...data },
    };
    return { object, file: `<plan ${x.field}>`, doc: 0, line: 1 };
  });
}
