import { execFile, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  cacheRoot,
  ImagePullError,
  imagePodCommand,
  type LocalRegistry,
  type PulledImage,
  pullImage,
  startControllerImageRegistry,
} from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The pod runner's image path without a cluster: the controller image built from these sources, pushed to Debian's
// docker-registry on loopback, pulled by the digest 40-deployment.yaml pins, and run the way the runner runs a
// container (unshare + chroot), with a probe as the container's command in place of the controller.
const run = promisify(execFile);
const DEPLOYMENT = new URL('../../../bootstrap-manifests/baton-controller/40-deployment.yaml', import.meta.url)
  .pathname;
const REPOSITORY = 'baton-dev/baton-controller';
let registry: LocalRegistry;
let image: PulledImage;
let dir: string;

beforeAll(async () => {
  registry = await startControllerImageRegistry(DEPLOYMENT);
  const digest = /@(sha256:[0-9a-f]{64})/.exec(readFileSync(DEPLOYMENT, 'utf8'))![1]!;
  image = await pullImage({
    registry: registry.host,
    repository: REPOSITORY,
    digest,
    cacheDir: join(cacheRoot(), 'image', 'rootfs'),
  });
  dir = mkdtempSync(join(tmpdir(), 'baton-image-pod-'));
});

afterAll(async () => {
  await registry?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Regular files under `dir`, not following symbolic links. */
function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return e.isFile() ? [p] : [];
  });
}

const PROBE = `
const fs = require('node:fs');
const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } };
const git = require('node:child_process').execFileSync('git', ['--version']).toString().trim();
process.stdout.write(JSON.stringify({
  uid: process.getuid(), gid: process.getgid(), pid: process.pid, env: process.env,
  token: fs.readFileSync(sa + '/token', 'utf8'), namespace: fs.readFileSync(sa + '/namespace', 'utf8'),
  app: tryWrite('/app/x'), tmp: tryWrite('/tmp/x'), sa: tryWrite(sa + '/x'), git,
}));`;

describe('an image run the way the pod runner runs it', () => {
  it('runs as the image user, PID 1 of its namespace, read-only root, ServiceAccount files and a writable emptyDir', async () => {
    const spec = await imagePodCommand({
      image,
      dir,
      namespace: 'team-a',
      token: 'token-of-the-pod',
      caPem: 'ca',
      server: new URL('https://127.0.0.1:6443'),
      command: ['/usr/local/bin/node', '-e', PROBE],
      args: [],
      env: { POD_NAME: 'p-1' },
      emptyDirs: ['/tmp'],
      ownerPid: process.pid,
    });
    const { stdout } = await run(spec.command, spec.args, { env: spec.env });
    const seen = JSON.parse(stdout) as Record<string, unknown> & { env: Record<string, string> };
    expect(seen).toMatchObject({
      uid: 65532,
      gid: 65532,
      pid: 1,
      token: 'token-of-the-pod',
      namespace: 'team-a',
      app: 'EROFS',
      tmp: 'written',
      sa: 'EROFS',
      git: 'git version 2.39.5',
    });
    // The image's env and the container's, the in-cluster address; nothing of the host's environment.
    expect(seen.env).toMatchObject({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/tmp',
      POD_NAME: 'p-1',
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: '6443',
    });
    const expected = ['PATH', 'NODE_ENV', 'HOME', 'BATON_WORK_DIR', 'POD_NAME', 'KUBERNETES_SERVICE_HOST'];
    expected.push('KUBERNETES_SERVICE_PORT', ...(process.env.BATON_TEST_RUN_ID ? ['BATON_TEST_RUN_ID'] : []));
    expect(Object.keys(seen.env).sort()).toEqual(expected.sort());
  });

  it('has every shared library that each program and library in it needs (git over HTTP, Node.js, the CA tools)', async () => {
    // The image's own loader lists each ELF file's libraries inside its root: a library left out of image.lock.json
    // (libcrypto for git-remote-http once did) shows here, not as a controller that cannot fetch.
    const elfs = walk(image.rootfs).filter((f) => {
      const head = Buffer.alloc(4);
      const fd = openSync(f, 'r');
      try {
        return readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === '\x7fELF';
      } finally {
        closeSync(fd);
      }
    });
    expect(elfs.map((f) => f.slice(image.rootfs.length))).toContain('/usr/lib/git-core/git-remote-http');
    const missing: string[] = [];
    for (const f of elfs) {
      const inImage = f.slice(image.rootfs.length);
      const r = spawnSync('chroot', [image.rootfs, '/lib64/ld-linux-x86-64.so.2', '--list', inImage], {
        encoding: 'utf8',
      });
      const out = `${r.stdout}${r.stderr}`;
      if (/not found|cannot open shared object/.test(out)) missing.push(`${inImage}: ${out.trim()}`);
    }
    expect(missing).toEqual([]);
  });

  it('refuses a digest the registry does not have, as ErrImagePull', async () => {
    const missing = `sha256:${'0'.repeat(64)}`;
    const pull = pullImage({ registry: registry.host, repository: REPOSITORY, digest: missing, cacheDir: dir });
    await expect(pull).rejects.toBeInstanceOf(ImagePullError);
    await expect(pull).rejects.toThrow(`failed to pull image "${registry.host}/${REPOSITORY}@${missing}"`);
  });
});
