#!/usr/bin/env node
// Removes what a bed's real node leaves behind once its processes are stopped (or killed): the containerd shims
// and every process of every container (they run in their own sessions, outside the node's process groups), the
// mounts under the node's directories, the cgroup directories of its containers, and the bed's network namespace
// with its veth pair. Usage: node-teardown.mjs <cluster dir>. Idempotent; reads <cluster dir>/node/node.json (or
// network.json, when the node never started).
// Plain JS with no dependencies: the cluster's watchdog (reaper.mjs) runs it after its owner died.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) process.exit(2);
const readJson = (path) => {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
};
const node = readJson(join(dir, 'node', 'node.json'));
if (!node) {
  // The node never started (its owner was killed during the control plane's start) or is already torn down; the
  // namespace is recorded in network.json before it is made.
  const network = readJson(join(dir, 'network.json'));
  if (network) removeNetwork(network);
  process.exit(0);
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};
const pids = () => readdirSync('/proc').filter((d) => /^\d+$/.test(d));

// 1. Shims of this node's containerd (`-address <socket>`), and every descendant of them.
const shims = pids().filter((pid) => {
  const argv = read(`/proc/${pid}/cmdline`).split('\0');
  return argv[0]?.endsWith('containerd-shim-runc-v2') && argv.includes(node.containerdSocket);
});
const parentOf = new Map();
for (const pid of pids()) {
  const stat = read(`/proc/${pid}/stat`);
  const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  if (ppid) parentOf.set(pid, ppid);
}
const doomed = new Set(shims);
for (let grew = true; grew; ) {
  grew = false;
  for (const [pid, ppid] of parentOf) {
    if (doomed.has(ppid) && !doomed.has(pid)) {
      doomed.add(pid);
      grew = true;
    }
  }
}
for (const pid of doomed) {
  try {
    process.kill(Number(pid), 'SIGKILL');
  } catch {}
}
for (let i = 0; i < 50 && [...doomed].some((pid) => read(`/proc/${pid}/stat`) !== ''); i++) sleep(100);

// 2. Mounts under the node's directories (container rootfs, volumes, kubelet's bind mount of its root), deepest first.
const roots = [node.dir, node.runDir];
const mounts = read('/proc/self/mountinfo')
  .split('\n')
  .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
  .filter((m) => m && roots.some((r) => m === r || m.startsWith(`${r}/`)))
  .sort((a, b) => b.length - a.length);
for (const m of mounts) {
  try {
    execFileSync('umount', ['-l', m], { stdio: 'ignore' });
  } catch {}
}

// 3. Cgroup directories named after this node's containers and sandboxes (runc makes one per controller).
const ids = new Set(node.containerIds ?? []);
try {
  const tasks = join(node.runDir, 'containerd-state', 'io.containerd.runtime.v2.task', 'k8s.io');
  for (const id of readdirSync(tasks)) ids.add(id);
} catch {}
const cgroupRoot = '/sys/fs/cgroup';
const removeCgroups = (path, depth) => {
  let entries = [];
  try {
    entries = readdirSync(path, { withFileTypes: true }).filter((e) => e.isDirectory());
  } catch {
    return;
  }
  for (const e of entries) {
    const child = join(path, e.name);
    if (ids.has(e.name)) {
      for (let i = 0; i < 20; i++) {
        try {
          rmdirSync(child);
          break;
        } catch {
          sleep(100);
        }
      }
    } else if (depth > 0 && (e.name === 'k8s.io' || e.name === 'kubepods' || path === cgroupRoot)) {
      removeCgroups(child, depth - 1);
    }
  }
};
if (ids.size > 0) removeCgroups(cgroupRoot, 3);
// containerd's parent `k8s.io` under each controller, once empty (another bed's containers keep it: rmdir fails).
try {
  for (const controller of readdirSync(cgroupRoot)) {
    try {
      rmdirSync(join(cgroupRoot, controller, 'k8s.io'));
    } catch {}
  }
} catch {}

// 4. What the CNI library caches for each sandbox on the host (/var/lib/cni/results/<network>-<id>-<ifname>).
try {
  for (const f of readdirSync('/var/lib/cni/results')) {
    if (f.startsWith('baton-bed-') && [...ids].some((id) => f.includes(id)))
      rmSync(join('/var/lib/cni/results', f), { force: true });
  }
} catch {}

// 4b. kubelet's links to its containers' logs in the host's /var/log/containers (the path is fixed in kubelet); the logs
// themselves are in the bed's podLogsDir. Only links into this bed's directory.
try {
  for (const f of readdirSync('/var/log/containers')) {
    const link = join('/var/log/containers', f);
    try {
      if (readlinkSync(link).startsWith(`${dir}/`)) rmSync(link, { force: true });
    } catch {}
  }
} catch {}

// 5. The network namespace and the host end of its veth pair.
removeNetwork(node);

rmSync(node.runDir, { recursive: true, force: true });
rmSync(join(dir, 'node', 'node.json'), { force: true });

function removeNetwork({ netns, hostLink }) {
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {}
  try {
    execFileSync('ip', ['link', 'del', hostLink], { stdio: 'ignore' });
  } catch {}
}
