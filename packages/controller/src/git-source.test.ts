import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchRevision, GitFailure, GitFetchError } from './git-source.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const env = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env }).toString().trim();

describe('fetchRevision over file://', () => {
  it('fetches one branch shallowly and follows new commits', async () => {
    dir = await mkdtemp(join(tmpdir(), 'git-src-'));
    const src = join(dir, 'src');
    execFileSync('git', ['init', '-q', '--initial-branch=main', src], { env });
    await writeFile(join(src, 'a.yaml'), 'one');
    git(src, 'add', '.');
    git(src, 'commit', '-qm', '1');
    await writeFile(join(src, 'a.yaml'), 'two');
    git(src, 'commit', '-qam', '2');
    const work = join(dir, 'work');
    const r1 = await fetchRevision({ url: `file://${src}`, ref: { branch: 'main' }, workDir: work });
    expect(r1.revision).toBe(git(src, 'rev-parse', 'HEAD'));
    expect(await readFile(join(work, 'a.yaml'), 'utf8')).toBe('two');
    expect(git(work, 'rev-list', '--count', 'HEAD')).toBe('1');
    await writeFile(join(src, 'a.yaml'), 'three');
    git(src, 'commit', '-qam', '3');
    const r2 = await fetchRevision({ url: `file://${src}`, ref: { branch: 'main' }, workDir: work });
    expect(r2.revision).toBe(git(src, 'rev-parse', 'HEAD'));
    expect(await readFile(join(work, 'a.yaml'), 'utf8')).toBe('three');
  });

  it('classifies a missing branch as RefNotFound', async () => {
    dir = await mkdtemp(join(tmpdir(), 'git-src-'));
    const src = join(dir, 'src');
    execFileSync('git', ['init', '-q', '--initial-branch=main', src], { env });
    git(src, 'commit', '-q', '--allow-empty', '-m', '1');
    const err = await fetchRevision({ url: `file://${src}`, ref: { branch: 'nope' }, workDir: join(dir, 'w') }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GitFetchError);
    expect((err as GitFetchError).reason).toBe(GitFailure.notFound);
    expect((err as Error).message).toContain('branch nope does not exist');
  });
});
