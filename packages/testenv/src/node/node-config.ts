import { join } from 'node:path';
import { POD_CIDR } from './bed-network.js';

/** The cluster DNS Service's address (kubelet's `clusterDNS`). */
export const CLUSTER_DNS_IP = '10.96.0.10';
/** The bed's pod network on its one node (host-local IPAM on a bridge). */
export const NODE_POD_SUBNET = '10.244.0.0/24';

/** Where one real node keeps its files, sockets and logs. */
export interface NodeLayout {
  readonly nodeName: string;
  readonly nodeIp: string;
  /** Under the cluster directory: kubelet's root, containerd's root, configs. */
  readonly dir: string;
  /** Under /run (short paths: a unix socket path may not pass 107 bytes): containerd's state and socket. */
  readonly runDir: string;
  readonly pkiDir: string;
  /** `host:port` of the bed's registry, inside the namespace. */
  readonly registryHost: string;
  /** The pause image by digest, in the bed's registry. */
  readonly pauseImage: string;
  /** Registry hosts whose images the bed serves from its own registry instead (`ghcr.io`). */
  readonly mirroredRegistries: readonly string[];
  readonly kubeletKubeconfig: string;
  readonly kubeProxyKubeconfig: string;
  readonly corednsKubeconfig: string;
}

export const containerdSocket = (n: NodeLayout) => join(n.runDir, 'containerd.sock');
export const containerdStateDir = (n: NodeLayout) => join(n.runDir, 'containerd-state');
export const containerdRootDir = (n: NodeLayout) => join(n.dir, 'containerd');
export const kubeletRootDir = (n: NodeLayout) => join(n.dir, 'kubelet');
export const cniConfDir = (n: NodeLayout) => join(n.dir, 'cni');

/**
 * containerd 1.6 (config version 2), all of it under the bed's own paths. `restrict_oom_score_adj`: root here may
 * not lower oom_score_adj, and runc fails the sandbox without it; cgroupfs, as kubelet is told.
 */
export function containerdConfig(n: NodeLayout): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${containerdRootDir(n)}"
state = "${containerdStateDir(n)}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${containerdSocket(n)}"

[ttrpc]
  address = "${containerdSocket(n)}.ttrpc"

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(containerdRootDir(n), 'opt')}"

[${cri}]
  sandbox_image = "${n.pauseImage}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "${cniConfDir(n)}"

[${cri}.registry]
  config_path = "${join(n.dir, 'certs.d')}"
`;
}

/**
 * `certs.d/<host>/hosts.toml` files: the bed's registry over plain HTTP, and each mirrored registry (`ghcr.io`)
 * served by it alone, so an image the bed does not hold fails as not found, never as a lookup of the real host.
 */
export function registryHostFiles(n: NodeLayout): Record<string, string> {
  const local = `server = "http://${n.registryHost}"\n\n[host."http://${n.registryHost}"]\n  capabilities = ["pull", "resolve"]\n`;
  const files: Record<string, string> = { [join(n.registryHost, 'hosts.toml')]: local };
  for (const r of n.mirroredRegistries) {
    // The bed's registry is the only host: no fallback to the real registry, which a bed could not reach anyway.
    files[join(r, 'hosts.toml')] = local;
  }
  return files;
}

/** A bridge with host-local addresses; no masquerade, so a Pod's packets cannot leave the namespace either. */
export function cniConflist(n: NodeLayout): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'baton-bed',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          // The leases live with the bed (host-local's default, /var/lib/cni, would outlive it and be shared).
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: NODE_POD_SUBNET }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(n.dir, 'cni-leases'),
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/**
 * kubelet's configuration: the four settings a node on this machine needs (cgroup v1 allowed, cgroupfs, no QoS
 * cgroups, no allocatable enforcement, swap tolerated), authentication and authorization by the apiserver (no
 * anonymous access), and nothing that evicts or garbage-collects a test's Pods or images on a busy disk.
 */
export function kubeletConfig(n: NodeLayout, healthzPort: number): string {
  return `${JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: n.nodeIp,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: join(n.pkiDir, 'ca.crt') },
      },
      authorization: { mode: 'Webhook' },
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupsPerQOS: false,
      enforceNodeAllocatable: [],
      failSwapOn: false,
      clusterDNS: [CLUSTER_DNS_IP],
      clusterDomain: 'cluster.local',
      containerRuntimeEndpoint: `unix://${containerdSocket(n)}`,
      resolvConf: join(n.dir, 'resolv.conf'),
      rotateCertificates: false,
      serverTLSBootstrap: false,
      evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      maxPods: 110,
      syncFrequency: '10s',
      fileCheckFrequency: '20s',
      nodeStatusUpdateFrequency: '10s',
      serializeImagePulls: false,
      volumePluginDir: join(n.dir, 'volume-plugins'),
      // The bed's own, not the host's /var/log/pods: kubelet's garbage collector removes every pod log directory there
      // whose pod it does not know, which would be another bed's while two run side by side.
      podLogsDir: join(n.dir, 'pod-logs'),
    },
    null,
    2,
  )}\n`;
}

export function kubeletArgs(n: NodeLayout): string[] {
  return [
    `--config=${join(n.dir, 'kubelet.json')}`,
    `--kubeconfig=${n.kubeletKubeconfig}`,
    `--root-dir=${kubeletRootDir(n)}`,
    `--cert-dir=${join(n.dir, 'kubelet-pki')}`,
    `--node-ip=${n.nodeIp}`,
    `--hostname-override=${n.nodeName}`,
    '--v=1',
  ];
}

export function kubeProxyConfig(n: NodeLayout, healthzPort: number, metricsPort: number): string {
  return `${JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: n.kubeProxyKubeconfig },
      mode: 'iptables',
      clusterCIDR: POD_CIDR,
      hostnameOverride: n.nodeName,
      bindAddress: n.nodeIp,
      healthzBindAddress: `127.0.0.1:${healthzPort}`,
      metricsBindAddress: `127.0.0.1:${metricsPort}`,
      // Leave the namespace's conntrack table size alone: root here may not change it.
      conntrack: { maxPerCore: 0, min: 0 },
    },
    null,
    2,
  )}\n`;
}

/** CoreDNS on the node address: the cluster zone from the API, nothing forwarded (a bed has no way out). */
export function corefile(n: NodeLayout, readyPort: number, healthPort: number): string {
  return `.:53 {
    bind ${n.nodeIp}
    errors
    health ${n.nodeIp}:${healthPort}
    ready ${n.nodeIp}:${readyPort}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${n.corednsKubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
`;
}
