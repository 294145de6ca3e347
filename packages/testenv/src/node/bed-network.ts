import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ProcessError } from '@baton/errors';
import { withFileLock } from '../file-lock.js';
import { cacheRoot } from '../paths.js';

const run = promisify(execFile);

/** Where a bed with a real node sends Service traffic and where its Pods live (the same in every bed). */
export const SERVICE_CIDR = '10.96.0.0/16';
export const POD_CIDR = '10.244.0.0/16';
/** Each bed gets a /30 of this range: the host end of its veth pair, then its node address. */
const BED_RANGE = '10.250';

/**
 * A network namespace that holds one bed: every component of a cluster with a real node runs inside it, bound to
 * the node address. A veth pair joins it to the host through a /30, so the tests reach the node address, but the
 * namespace has no default route and the host does not forward: nothing in the bed can reach past the host end.
 */
export interface BedNetwork {
  /** `ip netns` name, `baton-<bed>`. */
  readonly name: string;
  /** `/run/netns/<name>`, what `nsenter --net=` takes. */
  readonly path: string;
  /** The node's address inside the namespace: components bind it, the tests connect to it. */
  readonly nodeIp: string;
  /** The host end of the veth pair. */
  readonly hostIp: string;
  readonly hostLink: string;
  /** The command line that runs `command` inside the namespace (nsenter execs it: same pid, same group). */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
}

/** Runs a network tool; a failure names the command line, its stderr and `hint`. */
async function tool(command: string, args: readonly string[], hint: string): Promise<string> {
  try {
    return (await run(command, [...args])).stdout;
  } catch (err) {
    throw new ProcessError(
      `${command} ${args.join(' ')} failed: ${String((err as { stderr?: string }).stderr ?? err).trim()}; ${hint}`,
      { cause: err },
    );
  }
}

const ip = (...args: string[]) => tool('ip', args, 'a bed with a real node needs root and the iproute2 tools');

/** The /30 blocks the host already holds in the bed range (other beds', live or left over). */
async function usedSlots(): Promise<Set<number>> {
  const out = await ip('-o', '-4', 'addr', 'show');
  const used = new Set<number>();
  for (const m of out.matchAll(new RegExp(`inet ${BED_RANGE.replace('.', '\\.')}\\.(\\d+)\\.(\\d+)/`, 'g')))
    used.add(Number(m[1]) * 64 + Math.floor(Number(m[2]) / 4));
  return used;
}

/**
 * The host end's name comes from the bed's name, not its /30: teardown deletes the link by name after the namespace
 * is gone (and with it the slot's address), so a link named after the slot could by then belong to a bed that has
 * just taken the freed slot, and deleting it would cut that bed off from the host mid-start. Interface names are at
 * most 15 characters.
 */
export function hostLinkOf(bed: string): string {
  return `btn${createHash('sha256').update(bed).digest('hex').slice(0, 10)}`;
}

function addressesOf(slot: number): { hostIp: string; nodeIp: string } {
  const third = Math.floor(slot / 64);
  const fourth = (slot % 64) * 4;
  return { hostIp: `${BED_RANGE}.${third}.${fourth + 1}`, nodeIp: `${BED_RANGE}.${third}.${fourth + 2}` };
}

/**
 * Creates the namespace of bed `bed` with loopback up, the veth pair, and a route for the Service range (so that
 * host-network components' packets to a ClusterIP reach kube-proxy's rules rather than fail with no route).
 * One bed at a time picks its /30, under a machine-wide lock.
 * With `recordPath`, first writes there the names it is about to create (`network.json`: the namespace and the
 * host link), so the watchdog's teardown (bin/node-teardown.mjs) removes them when the owner is killed mid-start.
 * @throws ProcessError when a step fails (the partial namespace is removed).
 */
export async function createBedNetwork(bed: string, recordPath?: string): Promise<BedNetwork> {
  const name = `baton-${bed}`;
  if (recordPath) await writeFile(recordPath, `${JSON.stringify({ netns: name, hostLink: hostLinkOf(bed) })}\n`);
  return withFileLock(join(cacheRoot(), 'testenv', 'bed-network.lock'), async () => {
    await guardBedRange();
    const used = await usedSlots();
    let slot = 1;
    while (used.has(slot)) slot++;
    if (slot >= 16_384) throw new ProcessError(`no free /30 left in ${BED_RANGE}.0.0/16 for bed ${bed}`);
    const { hostIp, nodeIp } = addressesOf(slot);
    const hostLink = hostLinkOf(bed);
    await removeBedNetwork(name, hostLink);
    try {
      await ip('netns', 'add', name);
      await ip('link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
      await ip('addr', 'add', `${hostIp}/30`, 'dev', hostLink);
      await ip('link', 'set', hostLink, 'up');
      await ip('-n', name, 'link', 'set', 'lo', 'up');
      await ip('-n', name, 'addr', 'add', `${nodeIp}/30`, 'dev', 'eth0');
      await ip('-n', name, 'link', 'set', 'eth0', 'up');
      await ip('-n', name, 'route', 'add', SERVICE_CIDR, 'dev', 'eth0');
    } catch (err) {
      await removeBedNetwork(name, hostLink);
      throw err;
    }
    const path = `/run/netns/${name}`;
    return {
      name,
      path,
      nodeIp,
      hostIp,
      hostLink,
      wrap: wrapInNetns(name),
    };
  });
}

/** The command line that runs a command inside network namespace `name` (nsenter execs it: same pid and group). */
export function wrapInNetns(name: string): BedNetwork['wrap'] {
  return (command, args) => ({ command: 'nsenter', args: [`--net=/run/netns/${name}`, '--', command, ...args] });
}

/**
 * Makes the whole bed range unreachable from the host except through a live bed's veth (whose /30 is more specific):
 * without it, a request to a bed that is gone (a test checking that `down` stopped its Git server) would follow the
 * host's default route off the machine. Kept for good (it is the same for every bed, and harmless); idempotent.
 */
async function guardBedRange(): Promise<void> {
  await ip('route', 'replace', 'unreachable', `${BED_RANGE}.0.0/16`);
}

/** Deletes the namespace and the host end of its veth pair; what is already gone is not an error. */
export async function removeBedNetwork(name: string, hostLink: string): Promise<void> {
  await run('ip', ['netns', 'del', name]).catch(() => {});
  await run('ip', ['link', 'del', hostLink]).catch(() => {});
}

/** Where a bed's real node is, as far as a link between beds needs it. */
export interface LinkableBed {
  /** `ip netns` name of the bed's namespace. */
  readonly netns: string;
  readonly nodeIp: string;
}

/**
 * The /30 of the link from a bed to `to`, and the link's interface names in each namespace: derived from `to`'s node
 * address (unique on the machine, so one bed's links never share a subnet) and from the beds' names.
 */
export function bedLinkOf(
  from: LinkableBed,
  to: LinkableBed,
): { fromIp: string; toIp: string; fromLink: string; toLink: string } {
  const [, , third, fourth] = to.nodeIp.split('.').map(Number) as [number, number, number, number];
  const base = fourth - (fourth % 4);
  const name = (peer: string) => `bl${createHash('sha256').update(peer).digest('hex').slice(0, 11)}`;
  return {
    fromIp: `${LINK_RANGE}.${third}.${base + 1}`,
    toIp: `${LINK_RANGE}.${third}.${base + 2}`,
    fromLink: name(to.netns),
    toLink: name(from.netns),
  };
}

/** Each link between two beds gets a /30 of this range (inside the two namespaces only, never on the host). */
const LINK_RANGE = '10.251';

/**
 * Lets the Pods of bed `from` reach bed `to`'s node address (a fleet's shard Pods in the management bed reaching
 * each target's apiserver), and nothing else: a veth pair between the two namespaces, a route to `to`'s node address
 * in `from`, and a masquerade of what leaves `from` by that link (every bed has the same Pod range, so `to` could not
 * answer a Pod's own address). `to` gets no route back to anything but the link's address. Nothing is added on the
 * host; the link goes when either namespace is deleted.
 * @throws ProcessError when a step fails.
 */
export async function linkBeds(from: LinkableBed, to: LinkableBed): Promise<void> {
  const l = bedLinkOf(from, to);
  await ip('link', 'add', l.fromLink, 'netns', from.netns, 'type', 'veth', 'peer', 'name', l.toLink, 'netns', to.netns);
  await ip('-n', from.netns, 'addr', 'add', `${l.fromIp}/30`, 'dev', l.fromLink);
  await ip('-n', from.netns, 'link', 'set', l.fromLink, 'up');
  await ip('-n', to.netns, 'addr', 'add', `${l.toIp}/30`, 'dev', l.toLink);
  await ip('-n', to.netns, 'link', 'set', l.toLink, 'up');
  await ip('-n', from.netns, 'route', 'add', `${to.nodeIp}/32`, 'via', l.toIp, 'dev', l.fromLink);
  const inFrom = (command: string, ...args: string[]) => {
    const w = wrapInNetns(from.netns)(command, args);
    return tool(w.command, w.args, `linking ${from.netns} to ${to.netns} needs root, sysctl and iptables`);
  };
  await inFrom('sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
  await inFrom('iptables', '-t', 'nat', '-A', 'POSTROUTING', '-o', l.fromLink, '-j', 'MASQUERADE');
}
