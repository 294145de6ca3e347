import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveGitRevision } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { type GitServer, startGitServer } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The plan's `pull.source.ref` resolved against the real Git server (git http-backend), as `baton up` does
// before it pushes: the commit the controller must report is the one the ref names, exactly.
let git: GitServer;
let dir: string;
let mainSha: string;
let devMainSha: string;
const repo = 'refs-repo';

beforeAll(async () => {
  git = await startGitServer();
  dir = await mkdtemp(join(tmpdir(), 'baton-git-revision-'));
  await git.createRepo(repo);
  mainSha = await git.commitFiles(repo, { 'a.yaml': 'one\n' }, 'main');
  // dev/main sorts before main in ls-remote's listing and ends in "/main".
  devMainSha = await git.commitFiles(repo, { 'a.yaml': 'two\n' }, 'dev');
  await git.setBranch(repo, 'dev/main', devMainSha);
  await git.setBranch(repo, 'main', mainSha);
});

afterAll(async () => {
  await git?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const auth = () => ({ username: git.credentials.username, password: git.credentials.password });
const resolve = (ref: string, url = git.repoUrl(repo)) => resolveGitRevision({ url, ref }, auth());

describe('resolveGitRevision against the real Git server', () => {
  it('ref main resolves to main, not to dev/main listed before it', async () => {
    expect(mainSha).not.toBe(devMainSha);
    expect(await resolve('main')).toBe(mainSha);
    expect(await resolve('dev/main')).toBe(devMainSha);
    expect(await resolve('refs/heads/main')).toBe(mainSha);
  });

  it('an annotated tag resolves to the commit it tags, not to the tag object', async () => {
    const tagObject = await git.createTag(repo, 'v1.0.0', devMainSha, 'release 1.0.0');
    expect(tagObject).not.toBe(devMainSha);
    expect(await resolve('v1.0.0')).toBe(devMainSha);
    expect(await resolve('refs/tags/v1.0.0')).toBe(devMainSha);
    const light = await git.createTag(repo, 'light', mainSha);
    expect(light).toBe(mainSha);
    expect(await resolve('light')).toBe(mainSha);
  });

  it('a missing ref is a ConfigError naming the URL, the ref and the names looked for', async () => {
    const err = await resolve('release').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(
      `${git.repoUrl(repo)} has no ref release (looked for refs/heads/release, refs/tags/release); ` +
        'check pull.source.ref (a branch, a tag or a full ref name) or pin pull.source.revision',
    );
  });

  it('a URL that begins with "-" is a repository name, never a git option', async () => {
    const marker = join(dir, 'upload-pack-ran');
    const before = await readdir(process.cwd());
    const err = await resolve('main', `--upload-pack=touch ${marker}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^cannot resolve main of --upload-pack=touch .*; check pull\.source/);
    expect(existsSync(marker)).toBe(false);
    expect(await readdir(process.cwd())).toEqual(before);
  });
});
