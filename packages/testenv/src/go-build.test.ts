import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BuildError } from '@baton/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { ensureGoBuild, goVersion } from './go-build.js';

const tempDir = useTempDirs();

const savedPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = savedPath;
});

describe('ensureGoBuild', () => {
  it('says how to install Go when go is not on PATH', async () => {
    process.env.PATH = '/nonexistent';
    await expect(goVersion()).rejects.toThrow(BuildError);
    await expect(goVersion()).rejects.toThrow(/go was not found on PATH.*install Go 1\.26/);
  });

  it('builds a tiny module once, reuses the cache, and names the module and log when a build fails', async () => {
    const dir = tempDir('gobuild-');
    const mod = join(dir, 'mod');
    await (await import('node:fs/promises')).mkdir(mod);
    await writeFile(join(mod, 'go.mod'), 'module example.com/hello\n\ngo 1.22\n');
    await writeFile(join(mod, 'main.go'), 'package main\n\nvar Version = "dev"\n\nfunc main() { println(Version) }\n');
    const spec = {
      name: 'hello',
      moduleDir: mod,
      packages: ['example.com/hello'],
      ldflags: ['-X main.Version=v1'],
      versions: { hello: 'v1' },
      usualSeconds: 65,
    };
    const progress: string[] = [];
    const first = await ensureGoBuild(spec, {
      cacheDir: join(dir, 'cache'),
      onProgress: (line) => progress.push(line),
      progressIntervalMs: 1,
    });
    // While it builds, the elapsed time is shown against the usual duration (a long wait is not a hang).
    expect(progress[0]).toMatch(/^building hello \(hello v1, usually about 1:05 on 2 cores\); log: /);
    expect(progress).toContainEqual(
      expect.stringMatching(/^building hello: 0:\d\d elapsed, usually about 1:05 on 2 cores; log: .*\.build\.log$/),
    );
    expect(progress.at(-1)).toMatch(/^built hello in [\d.]+ s$/);
    expect(first.built).toBe(true);
    expect(first.sizes.hello).toBeGreaterThan(0);
    expect(first.buildCpuSeconds === null || first.buildCpuSeconds >= 0).toBe(true);
    const again = await ensureGoBuild(spec, { cacheDir: join(dir, 'cache') });
    expect(again.built).toBe(false);
    expect(again.dir).toBe(first.dir);
    const { spawnSync } = await import('node:child_process');
    // The version ldflag reached the binary (println writes to stderr).
    expect(spawnSync(first.binaries.hello!, { encoding: 'utf8' }).stderr.trim()).toBe('v1');

    await writeFile(join(mod, 'main.go'), 'package main\n\nfunc main() { undefined() }\n');
    const err = await ensureGoBuild(spec, { cacheDir: join(dir, 'cache') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BuildError);
    expect((err as Error).message).toMatch(
      /building hello failed: `go build .*exited with 1; last lines of .*\.build\.log:\n[\s\S]*undefined/,
    );
  }, 120_000);
});
