import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deploymentState } from '@baton/kube';
import { type Cluster, clustersDir, hostLinkOf, startCluster } from '@baton/testenv';
import { CONTROLLER_IMAGE, pushControllerImage } from '@baton/testenv/images';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClients, eventually } from '../../support/kube.js';

// A bed with a real node: kubelet, containerd, runc, the CNI bridge, kube-proxy and CoreDNS inside the bed's own
// network namespace. Nothing here plays kubelet: every status below is the real kubelet's.
const DEPLOYMENT = fileURLToPath(
  new URL('../../../bootstrap-manifests/baton-controller/40-deployment.yaml', import.meta.url),
);
const pinned = /image: (\S+@sha256:[0-9a-f]{64})/.exec(readFileSync(DEPLOYMENT, 'utf8'))![1]!;

let cluster: Cluster;
let admin: ReturnType<typeof adminClients>;

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  admin = adminClients(cluster.kubeconfigPath);
  await pushControllerImage(DEPLOYMENT, cluster.realNode!.pushImage);
});

afterAll(async () => {
  await cluster?.stop();
});

const sleepPod = (name: string, container: Record<string, unknown>) => ({
  metadata: { name },
  spec: {
    restartPolicy: 'Never',
    securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
    containers: [
      {
        name: 'c',
        image: pinned,
        securityContext: {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        ...container,
      },
    ],
  },
});

async function podPhase(name: string): Promise<string | undefined> {
  return (await admin.core.readNamespacedPod({ namespace: 'default', name })).status?.phase;
}

describe('a bed with a real node', () => {
  it('is one node, Ready, at the node address, with the kubernetes Service pointing there', async () => {
    const nodes = await admin.core.listNode();
    expect(nodes.items.map((n) => n.metadata?.name)).toEqual([cluster.realNode!.nodeName]);
    const node = nodes.items[0]!;
    expect(node.status?.nodeInfo?.kubeletVersion).toBe(cluster.kubernetesVersion);
    expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
    expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: cluster.realNode!.nodeIp });
    expect(cluster.server).toBe(`https://${cluster.realNode!.nodeIp}:${new URL(cluster.server).port}`);
    const slices = await admin.kc.makeApiClient(k8s.DiscoveryV1Api).listNamespacedEndpointSlice({
      namespace: 'default',
      labelSelector: 'kubernetes.io/service-name=kubernetes',
    });
    expect(slices.items.flatMap((s) => s.endpoints.flatMap((e) => e.addresses))).toEqual([cluster.realNode!.nodeIp]);
  });

  it('runs the pinned image by digest: the Pod reaches the apiserver as the kubernetes Service with its mounted token, resolves cluster DNS, and its log is read through the kubelet', async () => {
    const script = `
      const dns = require('node:dns'); const https = require('node:https'); const fs = require('node:fs');
      const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
      dns.lookup('kubernetes.default.svc.cluster.local', (err, address) => {
        console.log('dns', err ? err.code : address);
        https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: Number(process.env.KUBERNETES_SERVICE_PORT), path: '/version',
          ca: fs.readFileSync(sa + '/ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8') } },
          (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => console.log('api', res.statusCode, JSON.parse(b).gitVersion)); })
          .on('error', (e) => console.log('api error', e.message));
      });`;
    await admin.core.createNamespacedPod({
      namespace: 'default',
      body: sleepPod('in-cluster', { command: ['/usr/local/bin/node', '-e', script] }),
    });
    await eventually(async () => (await podPhase('in-cluster')) === 'Succeeded', 60_000, 'the Pod to succeed');
    const pod = await admin.core.readNamespacedPod({ namespace: 'default', name: 'in-cluster' });
    const status = pod.status!.containerStatuses![0]!;
    expect(status.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
    expect(status.imageID).toBe(pinned);
    const log = await admin.core.readNamespacedPodLog({ namespace: 'default', name: 'in-cluster' });
    expect(log).toContain('dns 10.96.0.1');
    expect(log).toContain(`api 200 ${cluster.kubernetesVersion}`);
  });

  it("the kubelet's own reasons reach a Deployment's readiness: a missing Secret, an image not in the registry, a crash loop with its log tail", async () => {
    const deploy = async (name: string, container: Record<string, unknown>) => {
      const pod = sleepPod(name, { terminationMessagePolicy: 'FallbackToLogsOnError', ...container });
      await admin.apps.createNamespacedDeployment({
        namespace: 'default',
        body: {
          metadata: { name },
          spec: {
            selector: { matchLabels: { app: name } },
            template: { metadata: { labels: { app: name } }, spec: { ...pod.spec, restartPolicy: 'Always' } },
          },
        },
      });
    };
    await deploy('needs-secret', {
      env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'not-pushed', key: 'k' } } }],
    });
    await deploy('bad-digest', { image: `${CONTROLLER_IMAGE}@sha256:${'0'.repeat(63)}1` });
    await deploy('crashes', { args: ['--port=not-a-port'] });
    const reasons: Record<string, string> = {};
    const reasonOf = async (name: string, pattern: RegExp) => {
      reasons[name] = (await deploymentState(admin, 'default', name)).reason;
      return pattern.test(reasons[name]);
    };
    await Promise.all([
      eventually(
        () => reasonOf('needs-secret', /container c CreateContainerConfigError: secret "not-pushed" not found/),
        60_000,
        'CreateContainerConfigError',
      ),
      eventually(
        () => reasonOf('bad-digest', /container c (ErrImagePull|ImagePullBackOff): .*not found/),
        60_000,
        'ErrImagePull',
      ),
      eventually(
        () =>
          reasonOf(
            'crashes',
            /container c CrashLoopBackOff: .*last exited with code 2 \(Error\): .*--port must be an integer/,
          ),
        90_000,
        'a crash loop with the log tail',
      ),
    ]).catch((err) => {
      throw new Error(`${(err as Error).message}; reasons seen: ${JSON.stringify(reasons, null, 2)}`);
    });
  });
});

describe('stopping a bed with a real node', () => {
  it('leaves no process, mount, cgroup, network namespace, veth or host iptables rule', async () => {
    const bed = await startCluster({ node: 'real' });
    const http = adminClients(bed.kubeconfigPath);
    const { netns, registryHost } = bed.realNode!;
    // The pause image is always there: a Pod from it needs no push.
    await http.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'p', image: `${registryHost}/baton-testenv/pause:bed` }] },
      },
    });
    await eventually(
      async () => (await http.core.readNamespacedPod({ namespace: 'default', name: 'p' })).status?.phase === 'Running',
      60_000,
      'the Pod to run',
    );
    const containerId = (
      await http.core.readNamespacedPod({ namespace: 'default', name: 'p' })
    ).status!.containerStatuses![0]!.containerID!.slice('containerd://'.length);
    const iptablesBefore = execFileSync('iptables-save').toString().includes('KUBE-');
    const dir = bed.dir;
    await bed.stop();

    expect(iptablesBefore).toBe(false); // the node's rules live in its namespace, never on the host
    expect(execFileSync('iptables-save').toString()).not.toContain('KUBE-');
    expect(execFileSync('ip', ['netns', 'list']).toString()).not.toContain(netns);
    expect(existsSync(dir)).toBe(false);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(dir);
    const cgroups = readdirSync('/sys/fs/cgroup').filter((c) =>
      existsSync(join('/sys/fs/cgroup', c, 'k8s.io', containerId)),
    );
    expect(cgroups).toEqual([]);
    const left = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return (
            readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir) ||
            readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`/run/baton/${bed.name}/`)
          );
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
  });

  it("is torn down by the watchdog when its owner is killed with SIGKILL: the node's containers, mounts and namespace too", async () => {
    const name = `node-orphan-${process.pid}`;
    const script = `
      import { startCluster } from '@baton/testenv';
      const c = await startCluster({ node: 'real', name: '${name}' });
      process.stdout.write(JSON.stringify({ pids: c.pids, dir: c.dir, netns: c.realNode.netns }) + '\\n');
      setInterval(() => {}, 1 << 30);
    `;
    const child = spawn(
      process.execPath,
      ['--conditions=@baton/source', '--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const started = await new Promise<{ pids: Record<string, number>; dir: string; netns: string }>(
      (resolve, reject) => {
        child.stdout.once('data', (d: Buffer) => resolve(JSON.parse(String(d))));
        child.once('exit', (code) => reject(new Error(`owner exited early with ${code}`)));
      },
    );
    child.kill('SIGKILL'); // before any assertion: a failed one must not leave the owner running
    expect(Object.keys(started.pids)).toEqual(expect.arrayContaining(['kubelet', 'containerd', 'coredns', 'registry']));
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await eventually(async () => Object.values(started.pids).every((p) => !alive(p)), 20_000, 'every process gone');
    await eventually(
      async () => !execFileSync('ip', ['netns', 'list']).toString().includes(started.netns) && !existsSync(started.dir),
      30_000,
      'the namespace and the data directory to be removed',
    );
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(started.dir);
  });

  it('is torn down by the watchdog when its owner is killed during the start, before the node exists', async () => {
    const name = `node-early-${process.pid}`;
    const netns = `baton-${name}`;
    const dir = join(clustersDir(), name);
    const script = `
      import { startCluster } from '@baton/testenv';
      await startCluster({ node: 'real', name: '${name}' });
    `;
    const child = spawn(
      process.execPath,
      ['--conditions=@baton/source', '--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      // Killed as soon as the bed's namespace exists: the control plane is still starting, no node.json yet.
      await eventually(async () => netnsList().includes(netns), 60_000, 'the bed namespace to be made');
    } finally {
      child.kill('SIGKILL');
    }
    await exited;
    // The watchdog waits 3 s after the owner's death before its teardown: the directory is still as the owner left it.
    expect(existsSync(dir)).toBe(true);
    expect(existsSync(join(dir, 'node', 'node.json'))).toBe(false);
    await eventually(
      async () => !netnsList().includes(netns) && !existsSync(dir),
      30_000,
      'the namespace and the data directory to be removed',
    );
    expect(execFileSync('ip', ['-o', 'link', 'show']).toString()).not.toContain(hostLinkOf(name));
  });
});

function netnsList(): string {
  return execFileSync('ip', ['netns', 'list']).toString();
}
