import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Two clean checkouts of HEAD in different directories (git worktrees), each with its own `pnpm install`, build the
// images (`pnpm image:build`: baton-controller and the baton CLI); the second builds every layer again from the
// verified downloads (--no-layer-cache) into a scratch cache that shares only the downloads. Same commit, same
// digests, and each is pinned exactly where it is used.
const run = promisify(execFile);
const REPO = new URL('../../../', import.meta.url).pathname;
const dirs: string[] = [];

interface BuildResult {
  digest: string;
  sizeBytes: number;
  sbom: string;
  layers: { digest: string; diffId: string }[];
}

async function checkout(name: string): Promise<string> {
  const dir = join(mkdtempSync(join(tmpdir(), `baton-image-${name}-`)), 'baton');
  dirs.push(dir);
  await run('git', ['-C', REPO, 'worktree', 'add', '--detach', dir, 'HEAD']);
  await run('pnpm', ['install', '--frozen-lockfile', '--offline', '--reporter=silent'], { cwd: dir });
  return dir;
}

async function build(dir: string, extra: string[]): Promise<Record<'baton-controller' | 'baton', BuildResult>> {
  const { stdout } = await run('pnpm', ['--silent', 'image:build', '--json', '--out', join(dir, 'layouts'), ...extra], {
    cwd: dir,
    maxBuffer: 16 << 20,
  });
  return JSON.parse(stdout) as Record<'baton-controller' | 'baton', BuildResult>;
}

const blob = (layout: string, digest: string): Buffer =>
  readFileSync(join(layout, 'blobs/sha256', digest.slice('sha256:'.length)));

afterAll(async () => {
  for (const dir of dirs) {
    await run('git', ['-C', REPO, 'worktree', 'remove', '--force', dir]).catch(() => undefined);
    rmSync(join(dir, '..'), { recursive: true, force: true });
  }
});

let a: string;
let first: BuildResult;
let second: BuildResult;
let firstCli: BuildResult;
let secondCli: BuildResult;

// The builds are the fixture (two installs and a cold layer build: minutes on 2 busy cores); the tests read them.
beforeAll(async () => {
  a = await checkout('a');
  ({ 'baton-controller': first, baton: firstCli } = await build(a, []));
  const b = await checkout('b');
  const scratch = join(b, '..', 'cache');
  // Only the downloads are shared: every layer is built again from them.
  const downloads = join(homedir(), '.cache/baton/image');
  for (const d of ['debs', 'npm']) cpSync(join(downloads, d), join(scratch, d), { recursive: true });
  ({ 'baton-controller': second, baton: secondCli } = await build(b, ['--no-layer-cache', '--cache-dir', scratch]));
});

describe('the baton-controller image', () => {
  it('builds to the same digest from two clean checkouts, and 40-deployment.yaml pins that digest', () => {
    expect(second.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(second.digest).toBe(first.digest);
    expect(second.layers).toEqual(first.layers);
    expect(second.sbom).toBe(first.sbom);
    const deployment = readFileSync(join(a, 'bootstrap-manifests/baton-controller/40-deployment.yaml'), 'utf8');
    expect(deployment).toContain(`image: ghcr.io/baton-dev/baton-controller@${first.digest}`);
  });

  it('runs as 65532 with /tmp its one volume, and carries no build time', () => {
    const layout = join(a, 'layouts', 'baton-controller');
    const manifest = JSON.parse(blob(layout, first.digest).toString()) as { config: { digest: string } };
    const config = JSON.parse(blob(layout, manifest.config.digest).toString()) as {
      created?: string;
      config: { User: string; Entrypoint: string[]; Volumes: Record<string, unknown> };
      history: Record<string, unknown>[];
    };
    expect(config.created).toBeUndefined();
    expect(config.history.every((h) => h.created === undefined)).toBe(true);
    expect(config.config.User).toBe('65532:65532');
    expect(config.config.Entrypoint).toEqual(['/usr/local/bin/node', '/app/main.mjs']);
    expect(Object.keys(config.config.Volumes)).toEqual(['/tmp']);
  });

  it('has an SPDX SBOM, a referrer of the image, listing every package with its version', () => {
    const layout = join(a, 'layouts', 'baton-controller');
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string; artifactType?: string }[];
    };
    const sbomDesc = index.manifests.find((m) => m.artifactType === 'application/spdx+json')!;
    const sbomManifest = JSON.parse(blob(layout, sbomDesc.digest).toString()) as {
      subject: { digest: string };
      layers: { digest: string }[];
    };
    expect(sbomManifest.subject.digest).toBe(first.digest);
    const spdx = JSON.parse(blob(layout, sbomManifest.layers[0]!.digest).toString()) as {
      packages: { name: string; versionInfo: string }[];
    };
    const listed = new Map(spdx.packages.map((p) => [p.name, p.versionInfo]));
    const lock = JSON.parse(readFileSync(join(a, 'packages/controller/image/image.lock.json'), 'utf8')) as {
      node: { package: string; version: string };
      debs: { name: string; version: string }[];
    };
    for (const d of lock.debs) expect(listed.get(d.name), d.name).toBe(d.version);
    expect(listed.get(lock.node.package)).toBe(lock.node.version);
    expect(listed.get('pino')).toBe('10.4.0');
    expect(listed.get('@baton/controller')).toBe('0.1.0');
  });

  it('writes layer entries owned by 0:0 with mtime 0', async () => {
    const layout = join(a, 'layouts', 'baton-controller');
    const { stdout } = await run('tar', ['-tvzf', join(layout, 'blobs/sha256', first.layers[2]!.digest.slice(7))]);
    expect(stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^drwxr-xr-x 0\/0\s+0 1970-01-01 00:00 app\/$/),
      expect.stringMatching(/^-rw-r--r-- 0\/0\s+\d+ 1970-01-01 00:00 app\/main\.mjs$/),
    ]);
  });
});

describe('the baton CLI image (what the fleet’s Indexed Job shards run)', () => {
  it('builds to the same digest from two clean checkouts, and @baton/fleet pins that digest as the default image', () => {
    expect(secondCli.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(secondCli.digest).toBe(firstCli.digest);
    expect(secondCli.layers).toEqual(firstCli.layers);
    expect(secondCli.sbom).toBe(firstCli.sbom);
    const pinned = JSON.parse(readFileSync(join(a, 'packages/fleet/job-image.json'), 'utf8')) as { image: string };
    expect(pinned.image).toBe(`ghcr.io/baton-dev/baton@${firstCli.digest}`);
  });

  it('runs the bundled CLI with Node.js as 65532, on the controller’s Debian layer', () => {
    const layout = join(a, 'layouts', 'baton');
    const manifest = JSON.parse(blob(layout, firstCli.digest).toString()) as { config: { digest: string } };
    const config = JSON.parse(blob(layout, manifest.config.digest).toString()) as {
      config: { User: string; Entrypoint: string[] };
    };
    expect(config.config.User).toBe('65532:65532');
    expect(config.config.Entrypoint).toEqual(['/usr/local/bin/node', '/app/dist/main.mjs']);
    // Same locked packages, same layer: one blob for both images.
    expect(firstCli.layers[0]).toEqual(first.layers[0]);
    expect(firstCli.layers[1]).toEqual(first.layers[1]);
  });
});
