// Lists what the tests left behind and exits 1 if there is anything: processes that still carry this test run's
// marker in their environment (they were started, directly or not, by the tests), and what a bed's real node could
// leave outside any process: network namespaces and veth ends of beds, mounts under the beds' directories,
// containers' cgroup directories, and iptables rules on the host (kube-proxy's live only in a bed's namespace); and
// files and directories the run created in the OS temp dir (a test's scratch directory, or a kubeconfig a Go binary
// copied there: credentials must not outlive the run).
// Usage: leftovers.mjs <runId> <excludePid> [<run start, epoch seconds>]
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [runId, exclude, startedAt] = process.argv.slice(2);
const marker = `BATON_TEST_RUN_ID=${runId}`;
const left = [];
for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
  if (pid === exclude || pid === String(process.pid)) continue;
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    if (!env.includes(marker)) continue;
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    left.push(`${pid} ${cmd.slice(0, 200)}`);
  } catch {
    // The process ended while we looked.
  }
}
const run = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
};
const netns = run('ip', ['netns', 'list'])
  .split('\n')
  .filter((l) => l.startsWith('baton-'))
  .map((l) => `network namespace ${l.split(' ')[0]}`);
const links = run('ip', ['-o', 'link', 'show'])
  .split('\n')
  .map((l) => /^\d+: (btn[0-9a-f]+)[@:]/.exec(l)?.[1])
  .filter(Boolean)
  .map((l) => `veth ${l}`);
const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
  .split('\n')
  .map((l) => l.split(' ')[4] ?? '')
  .filter((m) => m.startsWith('/run/baton/') || /\/testenv\/clusters\//.test(m))
  .map((m) => `mount ${m}`);
const cgroups = existsSync('/sys/fs/cgroup')
  ? readdirSync('/sys/fs/cgroup').flatMap((c) => {
      const dir = `/sys/fs/cgroup/${c}/k8s.io`;
      if (!existsSync(dir)) return [];
      return readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `cgroup ${dir}/${e.name}`);
    })
  : [];
const iptables = run('iptables-save', [])
  .split('\n')
  .filter((l) => /KUBE-/.test(l))
  .slice(0, 5)
  .map((l) => `host iptables: ${l}`);
const cniCache = ['/var/lib/cni/results', '/var/lib/cni/networks']
  .flatMap((d) => (existsSync(d) ? readdirSync(d).map((f) => `${d}/${f}`) : []))
  .filter((f) => /\/baton-bed/.test(f))
  .map((f) => `CNI state ${f}`);
// Pod logs: a bed keeps them in its own directory; kubelet links each container's log from /var/log/containers.
const podLogs = ['/var/log/containers', '/var/log/pods']
  .flatMap((d) => (existsSync(d) ? readdirSync(d).map((f) => `${d}/${f}`) : []))
  .map((f) => `pod log ${f}`);
// Tools' own caches and work directories, which they reuse or remove themselves: not the tests' to clean.
const TOOL_TEMP = /^(tsx-\d+|tmux-\d+|vite-|node-compile-cache|go-build\d+|hsperfdata_|v8-compile-cache|\.)/;
const temp = startedAt
  ? readdirSync(tmpdir())
      .filter((name) => !TOOL_TEMP.test(name))
      .filter((name) => {
        try {
          // Created during the run (birth time; a file system without it reports 0, then the last change counts).
          const st = lstatSync(join(tmpdir(), name));
          return (st.birthtimeMs || st.ctimeMs) >= Number(startedAt) * 1000;
        } catch {
          return false; // removed while we looked
        }
      })
      .map((name) => `temp ${join(tmpdir(), name)}`)
  : [];
const other = [...netns, ...links, ...mounts, ...cgroups, ...iptables, ...cniCache, ...podLogs, ...temp];
if (left.length > 0) process.stderr.write(`processes left running after the tests:\n${left.join('\n')}\n`);
if (other.length > 0) process.stderr.write(`left behind by the tests (real nodes, temp files):\n${other.join('\n')}\n`);
if (left.length + other.length > 0) process.exit(1);
