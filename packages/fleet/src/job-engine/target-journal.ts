import type { KubeClients } from '@baton/kube';
import { kubeCall, statusOf } from '@baton/kube';

/** Label of the per-target journal ConfigMaps. */
export const TARGET_LABEL = 'baton.dev/fleet-target';

/** The name of a target's journal ConfigMap on the management cluster. */
export function journalName(cluster: string): string {
  return `baton-journal-${cluster}`.slice(0, 253);
}

/** What a target's journal ConfigMap holds (all secret-free). */
export interface TargetJournalData {
  /** Core's step journal of this cluster (JSON lines), as the last shard left it. */
  readonly journal?: string | undefined;
  /** A handoff record (JSON) the shard asks the orchestrator to sign and append; the shard holds no signing key. */
  readonly pendingRecord?: string | undefined;
  /** The orchestrator's answer: where the record landed (JSON AuditAppendResult), keyed by its run id. */
  readonly appended?: string | undefined;
  /** The shard's secret-free handoff summary (JSON), once the run ended. */
  readonly summary?: string | undefined;
}

/**
 * A cluster's state on the management cluster, in one ConfigMap updated by compare-and-set on resourceVersion, so a
 * replacement pod (the Job retried the index) resumes where a killed one stopped, and the orchestrator and the shard
 * never overwrite each other.
 */
export class TargetJournal {
  readonly #kube: KubeClients;
  readonly namespace: string;
  readonly name: string;
  readonly cluster: string;

  constructor(kube: KubeClients, namespace: string, cluster: string) {
    this.#kube = kube;
    this.namespace = namespace;
    this.cluster = cluster;
    this.name = journalName(cluster);
  }

  /** The current data, or empty when the ConfigMap does not exist yet. */
  async read(): Promise<{ data: TargetJournalData; resourceVersion: string | undefined }> {
    try {
      const cm = await this.#kube.core.readNamespacedConfigMap({ namespace: this.namespace, name: this.name });
      return { data: (cm.data ?? {}) as TargetJournalData, resourceVersion: cm.metadata?.resourceVersion };
    } catch (err) {
      if (statusOf(err) === 404) return { data: {}, resourceVersion: undefined };
      return kubeCall(`read ConfigMap ${this.namespace}/${this.name}`, () => Promise.reject(err));
    }
  }

  /**
   * Applies `change` to the current data and writes it only if nobody wrote in between (resourceVersion); on a
   * conflict it reads again and re-applies `change`. `change` returning undefined writes nothing.
   * @throws {KubeApiError} when the API refuses otherwise.
   */
  async update(change: (d: TargetJournalData) => TargetJournalData | undefined): Promise<TargetJournalData> {
    for (let attempt = 0; ; attempt++) {
      const { data, resourceVersion } = await this.read();
      const next = change(data);
      if (next === undefined) return data;
      const body = {
        metadata: {
          name: this.name,
          namespace: this.namespace,
          labels: { [TARGET_LABEL]: this.cluster, 'app.kubernetes.io/managed-by': 'baton' },
          ...(resourceVersion ? { resourceVersion } : {}),
        },
        data: Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined)) as Record<string, string>,
      };
      try {
        if (resourceVersion)
          await this.#kube.core.replaceNamespacedConfigMap({ namespace: this.namespace, name: this.name, body });
        else await this.#kube.core.createNamespacedConfigMap({ namespace: this.namespace, body });
        return next;
      } catch (err) {
        // 409: someone wrote since we read (or created it first); read again and re-apply.
        if (statusOf(err) === 409 && attempt < 20) continue;
        return kubeCall(`write ConfigMap ${this.namespace}/${this.name}`, () => Promise.reject(err));
      }
    }
  }
}

/**
 * Merges journal text: every line of `base` in order, then the lines of `local` it lacks. The journal is append-only,
 * so this never loses an entry whichever writer was first.
 */
export function mergeJournal(base: string | undefined, local: string): string {
  const have = new Set((base ?? '').split('\n').filter(Boolean));
  const extra = local.split('\n').filter((l) => l && !have.has(l));
  const lines = [...(base ?? '').split('\n').filter(Boolean), ...extra];
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
