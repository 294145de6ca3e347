import { ageOf, type Column } from '@baton/terminal';

/** A row of `baton testenv ls`. */
export interface ClusterRow {
  readonly name: string;
  readonly status: 'running' | 'stopped';
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly auditLogPath?: string | null | undefined;
  readonly startedAt?: string | undefined;
}

/** A row of `baton testenv nodes`. */
export interface NodeRow {
  readonly name: string;
  readonly ready: string;
  readonly kubelet: string;
  readonly created?: string | undefined;
}

/** `baton testenv ls`: ages relative to `now`, the start time and audit log only in `-o wide`. */
export function clusterColumns(now: number): readonly Column<ClusterRow>[] {
  return [
    { header: 'NAME', value: (r) => r.name, shrink: 'middle' },
    { header: 'STATUS', value: (r) => r.status },
    { header: 'AGE', value: (r) => ageOf(r.startedAt, now) },
    { header: 'SERVER', value: (r) => r.server, shrink: 'middle' },
    { header: 'KUBECONFIG', value: (r) => r.kubeconfigPath, shrink: 'middle', optional: true },
    { header: 'STARTED AT', value: (r) => r.startedAt ?? '', wide: true },
    { header: 'AUDIT LOG', value: (r) => r.auditLogPath ?? '', wide: true },
  ];
}

/** `baton testenv nodes`: kubectl get nodes' columns, the creation time only in `-o wide`. */
export function nodeColumns(now: number): readonly Column<NodeRow>[] {
  return [
    { header: 'NAME', value: (r) => r.name, shrink: 'middle' },
    { header: 'READY', value: (r) => r.ready },
    { header: 'AGE', value: (r) => ageOf(r.created, now) },
    { header: 'KUBELET', value: (r) => r.kubelet },
    { header: 'CREATED', value: (r) => r.created ?? '', wide: true },
  ];
}
