import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PulledImage } from './image-pull.js';

/** What a container of an image needs from its pod: identity, env, args and volumes. */
export interface ImagePodSpec {
  readonly image: PulledImage;
  /** The pod's folder: its ServiceAccount files, emptyDirs and the mount point of its root go here. */
  readonly dir: string;
  readonly namespace: string;
  /** The bound ServiceAccount token, as the kubelet projects it. */
  readonly token: string;
  /** PEM of the cluster CA (`ca.crt`). */
  readonly caPem: string;
  /** The apiserver, for KUBERNETES_SERVICE_HOST/PORT (the pod shares the host's network). */
  readonly server: URL;
  /** The container's `command` (replaces the image's Entrypoint) and `args` (replace its Cmd). */
  readonly command?: readonly string[];
  readonly args: readonly string[];
  /** The container's env, after the image's. */
  readonly env: Readonly<Record<string, string>>;
  /** emptyDir volumes by mount path. */
  readonly emptyDirs: readonly string[];
  /** runAsUser/runAsGroup of the pod or container; the image's `User` otherwise. */
  readonly user?: { readonly uid?: number; readonly gid?: number };
  /** Kept alive only while this process lives. */
  readonly ownerPid: number;
}

/** The ServiceAccount volume's mount path, as in every pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

// Runs in a new mount namespace as root, with the host's tools: the image's root read-only at $mnt, /proc of the new
// PID namespace, a /dev of four devices, the ServiceAccount files read-only and the emptyDirs; then the entrypoint as
// the image's user. Mounts go with the namespace when its last process exits.
const INNER = `set -eu
root=$1 mnt=$2 sa=$3 user=$4 group=$5; shift 5
/usr/bin/mount --bind "$root" "$mnt"
/usr/bin/mount -o remount,bind,ro "$mnt"
/usr/bin/mount -t proc -o nosuid,nodev,noexec proc "$mnt/proc"
/usr/bin/mount -t tmpfs -o nosuid,mode=755 tmpfs "$mnt/dev"
for d in null zero random urandom; do : > "$mnt/dev/$d"; /usr/bin/mount --bind "/dev/$d" "$mnt/dev/$d"; done
ln -s /proc/self/fd "$mnt/dev/fd"
/usr/bin/mount --bind "$sa" "$mnt${SERVICE_ACCOUNT_DIR}"
/usr/bin/mount -o remount,bind,ro "$mnt${SERVICE_ACCOUNT_DIR}"
while [ "$1" != -- ]; do /usr/bin/mount --bind "$1" "$mnt$2"; shift 2; done; shift
unset PWD OLDPWD
exec /usr/sbin/chroot --userspec="$user:$group" --groups="$group" "$mnt" "$@"`;

// On the host: the namespaces' init process dies with unshare (--kill-child), and unshare is killed once the
// owner (the test process playing kubelet) is gone, so a pod never outlives its runner.
const OUTER = `owner=$1; shift
/usr/bin/unshare --mount --pid --fork --kill-child --propagation private /bin/sh -c "$0" inner "$@" &
c=$!
# The container's own SIGTERM handler decides how it stops; this shell waits for it.
trap '' TERM INT
while kill -0 "$owner" 2>/dev/null && kill -0 "$c" 2>/dev/null; do sleep 1; done
kill -KILL "$c" 2>/dev/null || true
wait "$c"`;

/**
 * Prepares the pod's files (ServiceAccount token, ca.crt and namespace owned by the run user, its emptyDirs) and the
 * mount points in the unpacked image, and returns the command that runs the container: `unshare` into new mount and
 * PID namespaces, `chroot` into the image's root mounted read-only, as its user, with only the image's and the
 * container's env (no host environment) and the in-cluster apiserver address.
 */
export async function imagePodCommand(
  s: ImagePodSpec,
): Promise<{ command: string; args: string[]; env: Record<string, string> }> {
  const [imageUid, imageGid] = (s.image.config.User ?? '0:0').split(':').map(Number);
  const uid = s.user?.uid ?? imageUid ?? 0;
  const gid = s.user?.gid ?? imageGid ?? uid;
  const sa = join(s.dir, 'serviceaccount');
  await mkdir(sa, { recursive: true });
  for (const [name, text] of [
    ['token', s.token],
    ['ca.crt', s.caPem],
    ['namespace', s.namespace],
  ] as const) {
    await writeFile(join(sa, name), text, { mode: 0o600 });
    await chown(join(sa, name), uid, gid);
  }
  const mounts: string[] = [];
  for (const [i, path] of s.emptyDirs.entries()) {
    const host = join(s.dir, 'volumes', String(i));
    await mkdir(host, { recursive: true });
    // An emptyDir is world-writable, as the kubelet makes it.
    await chmod(host, 0o1777);
    mounts.push(host, path);
  }
  for (const p of ['proc', 'dev', SERVICE_ACCOUNT_DIR, ...s.emptyDirs])
    await mkdir(join(s.image.rootfs, p), { recursive: true });
  const mnt = join(s.dir, 'root');
  await mkdir(mnt, { recursive: true });
  const entry = [...(s.command ?? s.image.config.Entrypoint ?? []), ...s.args];
  const imageEnv = Object.fromEntries(
    (s.image.config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
  return {
    command: '/bin/sh',
    args: [
      '-c',
      OUTER,
      INNER,
      String(s.ownerPid),
      s.image.rootfs,
      mnt,
      sa,
      String(uid),
      String(gid),
      ...mounts,
      '--',
      ...entry,
    ],
    env: {
      ...imageEnv,
      KUBERNETES_SERVICE_HOST: s.server.hostname.replace(/^\[|\]$/g, ''),
      KUBERNETES_SERVICE_PORT: s.server.port || '443',
      ...s.env,
      ...(process.env.BATON_TEST_RUN_ID ? { BATON_TEST_RUN_ID: process.env.BATON_TEST_RUN_ID } : {}),
    },
  };
}
