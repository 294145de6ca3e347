import { describe, expect, it } from 'vitest';
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  type NodeLayout,
  registryHostFiles,
} from './node-config.js';

const n: NodeLayout = {
  nodeName: 'bed-node-0',
  nodeIp: '10.250.0.6',
  dir: '/cache/clusters/bed/node',
  runDir: '/run/baton/bed',
  pkiDir: '/cache/clusters/bed/pki',
  registryHost: '10.250.0.6:5000',
  pauseImage: '10.250.0.6:5000/baton-testenv/pause@sha256:abc',
  mirroredRegistries: ['ghcr.io'],
  kubeletKubeconfig: '/k/kubelet',
  kubeProxyKubeconfig: '/k/kube-proxy',
  corednsKubeconfig: '/k/coredns',
};

describe("a real node's configuration", () => {
  it('kubelet: the settings this machine needs, authentication by the apiserver, nothing evicted or collected', () => {
    const c = JSON.parse(kubeletConfig(n, 0));
    expect(c).toMatchObject({
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupsPerQOS: false,
      enforceNodeAllocatable: [],
      failSwapOn: false,
      address: n.nodeIp,
      readOnlyPort: 0,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
      authorization: { mode: 'Webhook' },
      clusterDNS: ['10.96.0.10'],
      // Never the host's /var/log/pods, which another bed's kubelet garbage-collects.
      podLogsDir: '/cache/clusters/bed/node/pod-logs',
      containerRuntimeEndpoint: 'unix:///run/baton/bed/containerd.sock',
      imageGCHighThresholdPercent: 100,
    });
  });

  it('containerd: its own root, state and socket; the pause image by digest; oom_score_adj restricted; cgroupfs', () => {
    const toml = containerdConfig(n);
    expect(toml).toContain('root = "/cache/clusters/bed/node/containerd"');
    expect(toml).toContain('state = "/run/baton/bed/containerd-state"');
    expect(toml).toContain('address = "/run/baton/bed/containerd.sock"');
    expect(toml).toContain(`sandbox_image = "${n.pauseImage}"`);
    expect(toml).toContain('restrict_oom_score_adj = true');
    expect(toml).toContain('SystemdCgroup = false');
    expect(toml).toContain('config_path = "/cache/clusters/bed/node/certs.d"');
  });

  it('registries: a mirrored registry is served by the bed alone, with no fallback to the real host', () => {
    const files = registryHostFiles(n);
    expect(Object.keys(files).sort()).toEqual(['10.250.0.6:5000/hosts.toml', 'ghcr.io/hosts.toml']);
    expect(files['ghcr.io/hosts.toml']).toContain('server = "http://10.250.0.6:5000"');
    expect(files['ghcr.io/hosts.toml']).not.toContain('https://ghcr.io');
  });

  it('CNI: a bridge without masquerade, its leases kept with the bed', () => {
    const c = JSON.parse(cniConflist(n));
    expect(c.plugins[0]).toMatchObject({ type: 'bridge', ipMasq: false, isGateway: true });
    expect(c.plugins[0].ipam.dataDir).toBe('/cache/clusters/bed/node/cni-leases');
  });

  it("kube-proxy: iptables mode, the node's name, the conntrack table left alone", () => {
    const c = JSON.parse(kubeProxyConfig(n, 1, 2));
    expect(c).toMatchObject({
      mode: 'iptables',
      hostnameOverride: n.nodeName,
      clusterCIDR: '10.244.0.0/16',
      conntrack: { maxPerCore: 0, min: 0 },
    });
  });
});
