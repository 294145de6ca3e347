import { join } from 'node:path';

/** Loopback ports of one cluster's components. */
export interface ClusterPorts {
  readonly etcdClient: number;
  readonly etcdPeer: number;
  readonly apiserver: number;
  readonly controllerManager: number;
  readonly scheduler: number;
  readonly kwok: number;
}

/** Kubeconfig files in a cluster directory, one per client identity. */
export interface ClusterKubeconfigs {
  /** O=system:masters: the operator's, and what `Cluster.kubeconfigPath` names. */
  readonly admin: string;
  readonly controllerManager: string;
  readonly scheduler: string;
  readonly kwok: string;
}

/** Where one cluster's files are and where its components listen: everything the command lines need. */
export interface ClusterLayout {
  readonly name: string;
  readonly dir: string;
  /** Certificates and keys (see `writeCertificates` in cluster.ts for the file names). */
  readonly pkiDir: string;
  /** One `<component>.log` per component. */
  readonly logDir: string;
  readonly ports: ClusterPorts;
  /**
   * The address every component binds: 127.0.0.1, or with a real node the node address inside the bed's network
   * namespace (which the host reaches through the bed's veth pair).
   */
  readonly host: string;
  /** True when a real kubelet serves the node (the apiserver then has kubelet client credentials). */
  readonly realNode: boolean;
  /** `https://<host>:<apiserver port>` */
  readonly server: string;
  readonly kubeconfigs: ClusterKubeconfigs;
  /** JSON-lines apiserver audit log; null when disabled. */
  readonly auditLogPath: string | null;
}

/** The audit policy file beside the audit log. */
export const auditPolicyPath = (layout: ClusterLayout) => join(layout.dir, 'audit-policy.yaml');

export function etcdArgs({ name, dir, ports, host }: ClusterLayout): string[] {
  return [
    `--name=${name}`,
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=http://${host}:${ports.etcdClient}`,
    `--advertise-client-urls=http://${host}:${ports.etcdClient}`,
    `--listen-peer-urls=http://${host}:${ports.etcdPeer}`,
    `--initial-advertise-peer-urls=http://${host}:${ports.etcdPeer}`,
    `--initial-cluster=${name}=http://${host}:${ports.etcdPeer}`,
    // A disposable test cluster: durability across power loss buys nothing, and fsync dominates start time.
    '--unsafe-no-fsync',
    '--log-level=warn',
    '--quota-backend-bytes=1073741824',
  ];
}

export function apiserverArgs(layout: ClusterLayout): string[] {
  const { pkiDir, ports, host } = layout;
  return [
    `--etcd-servers=http://${host}:${ports.etcdClient}`,
    `--bind-address=${host}`,
    `--advertise-address=${host}`,
    `--secure-port=${ports.apiserver}`,
    // The Endpoints of the kubernetes Service may not point at loopback; on a real node they point at the node
    // address, kept by the default lease reconciler, which is how in-cluster clients reach the apiserver.
    ...(layout.realNode
      ? [
          `--kubelet-client-certificate=${join(pkiDir, 'apiserver-kubelet-client.crt')}`,
          `--kubelet-client-key=${join(pkiDir, 'apiserver-kubelet-client.key')}`,
          '--kubelet-preferred-address-types=InternalIP',
        ]
      : ['--endpoint-reconciler-type=none']),
    `--cert-dir=${pkiDir}`,
    `--tls-cert-file=${join(pkiDir, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pkiDir, 'apiserver.key')}`,
    `--client-ca-file=${join(pkiDir, 'ca.crt')}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(pkiDir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pkiDir, 'sa.key')}`,
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    '--profiling=false',
    ...auditArgs(layout),
  ];
}

function auditArgs(layout: ClusterLayout): string[] {
  if (!layout.auditLogPath) return [];
  return [
    `--audit-policy-file=${auditPolicyPath(layout)}`,
    `--audit-log-path=${layout.auditLogPath}`,
    '--audit-log-format=json',
    // Blocking: a request's audit line is on disk before the response, so tests can read it at once.
    '--audit-log-mode=blocking',
    '--audit-log-maxbackup=1',
  ];
}

/** An apiserver client with its own loopback /healthz port and self-signed serving certificate. */
function clientComponentArgs(kubeconfig: string, securePort: number, certDir: string, host: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--bind-address=${host}`,
    `--secure-port=${securePort}`,
    `--cert-dir=${certDir}`,
  ];
}

export function controllerManagerArgs({ pkiDir, ports, kubeconfigs, host }: ClusterLayout): string[] {
  return [
    ...clientComponentArgs(kubeconfigs.controllerManager, ports.controllerManager, join(pkiDir, 'kcm'), host),
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${join(pkiDir, 'sa.key')}`,
    `--root-ca-file=${join(pkiDir, 'ca.crt')}`,
    `--cluster-signing-cert-file=${join(pkiDir, 'ca.crt')}`,
    `--cluster-signing-key-file=${join(pkiDir, 'ca.key')}`,
    '--leader-elect=false',
    '--profiling=false',
  ];
}

export function schedulerArgs({ pkiDir, ports, kubeconfigs, host }: ClusterLayout): string[] {
  return [
    ...clientComponentArgs(kubeconfigs.scheduler, ports.scheduler, join(pkiDir, 'scheduler'), host),
    '--leader-elect=false',
    '--profiling=false',
  ];
}

/** `stagesPath`: kwok's stock stage configuration (extracted from its module zip at build time). */
export function kwokArgs({ ports, kubeconfigs }: ClusterLayout, stagesPath: string): string[] {
  return [
    `--kubeconfig=${kubeconfigs.kwok}`,
    `--config=${stagesPath}`,
    '--manage-all-nodes=false',
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    '--node-lease-duration-seconds=40',
    `--server-address=127.0.0.1:${ports.kwok}`,
    '--cidr=10.244.0.0/16',
    '--node-ip=127.0.0.1',
  ];
}
