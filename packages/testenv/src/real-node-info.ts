// A cluster's real node as its users see it: where it is, and how to reach into it (its namespace, its registry, its
// containers' pids), from any process of this machine.
import { wrapInNetns } from './node/bed-network.js';
import { containerPid } from './node/real-node.js';
import { pushToRegistry } from './registry.js';

/** Where a cluster's real node is, as plain data: what a detached host reports, from which {@link realNodeInfo} works. */
export interface RealNodeCoordinates {
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly netns: string;
  readonly registryHost: string;
  readonly readySeconds: number;
  /** containerd's state under the node's directory (for a container's host pid). */
  readonly runDir: string;
}

/**
 * A real node's handle from its coordinates, in any process of this machine (root): commands enter its namespace
 * by path, images go to its registry over HTTP, container pids come from containerd's state files.
 */
export function realNodeInfo(c: RealNodeCoordinates): RealNodeInfo {
  return {
    nodeName: c.nodeName,
    nodeIp: c.nodeIp,
    netns: c.netns,
    registryHost: c.registryHost,
    readySeconds: c.readySeconds,
    coordinates: c,
    wrap: wrapInNetns(c.netns),
    containerPid: (id) => containerPid(c.runDir, id),
    pushImage: (layoutDir, repository, ref) => pushToRegistry(c.registryHost, layoutDir, repository, ref),
  };
}

/** A cluster's real node, as its users see it. */
export interface RealNodeInfo {
  readonly nodeName: string;
  /** The node address (every component of the bed binds it). */
  readonly nodeIp: string;
  /** The bed's network namespace (`/run/netns/<netns>`). */
  readonly netns: string;
  /** `host:port` of the bed's registry, from which the node pulls (it also serves `ghcr.io/…` by digest). */
  readonly registryHost: string;
  /** kubelet start to node Ready, seconds. */
  readonly readySeconds: number;
  /** The same, as data (a detached host reports them). */
  readonly coordinates: RealNodeCoordinates;
  /** The command line that runs `command` inside the bed's namespace. */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  /** The host pid of a running container's first process (`containerd://<id>` from a Pod's status, or the id). */
  containerPid(containerId: string): number;
  /** Pushes the image `ref` of an OCI layout to the bed's registry as `repository`; returns its digest. */
  pushImage(layoutDir: string, repository: string, ref: string): Promise<string>;
}
