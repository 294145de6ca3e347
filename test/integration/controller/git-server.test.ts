import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchRevision, GitFailure, GitFetchError } from '@baton/controller';
import { type GitServer, startGitServer } from '@baton/testenv/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The real Git server (git http-backend behind basic/bearer auth) and the controller's fetcher.
let git: GitServer;
let dir: string;
const TOKEN = 'deploy-token-7f3a9c';

beforeAll(async () => {
  git = await startGitServer({ tokens: [TOKEN] });
  dir = await mkdtemp(join(tmpdir(), 'git-server-test-'));
  await git.createRepo('r');
});

afterAll(async () => {
  await git?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('startGitServer + fetchRevision', () => {
  it('serves a commit over smart HTTP with basic auth, shallowly, and follows the branch', async () => {
    const sha1 = await git.commitFiles('r', { 'a/x.yaml': 'one\n' }, 'first');
    const work = join(dir, 'basic');
    const auth = { username: git.credentials.username, password: git.credentials.password };
    expect(
      (await fetchRevision({ url: git.repoUrl('r'), ref: { branch: 'main' }, workDir: work, auth })).revision,
    ).toBe(sha1);
    const sha2 = await git.commitFiles('r', { 'a/x.yaml': 'two\n', 'b.yaml': 'b\n' }, 'second');
    expect(
      (await fetchRevision({ url: git.repoUrl('r'), ref: { branch: 'main' }, workDir: work, auth })).revision,
    ).toBe(sha2);
    expect(await readFile(join(work, 'a/x.yaml'), 'utf8')).toBe('two\n');
    const sha3 = await git.commitFiles('r', { 'b.yaml': null }, 'delete b');
    expect(
      (await fetchRevision({ url: git.repoUrl('r'), ref: { branch: 'main' }, workDir: work, auth })).revision,
    ).toBe(sha3);
    await expect(readFile(join(work, 'b.yaml'), 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('accepts a bearer token', async () => {
    const head = await git.commitFiles('r', { 'c.yaml': 'c\n' }, 'third');
    const r = await fetchRevision({
      url: git.repoUrl('r'),
      ref: { branch: 'main' },
      workDir: join(dir, 'bearer'),
      auth: { bearerToken: TOKEN },
    });
    expect(r.revision).toBe(head);
  });

  it('rejects a wrong password (401) as AuthenticationFailed without echoing the secret, and no credential is in the URL', async () => {
    const before = git.requestCounts.get(401) ?? 0;
    const err = await fetchRevision({
      url: git.repoUrl('r'),
      ref: { branch: 'main' },
      workDir: join(dir, 'bad'),
      auth: { username: 'baton', password: 'wrong-pass-123' },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitFetchError);
    expect((err as GitFetchError).reason).toBe(GitFailure.authentication);
    expect((err as Error).message).not.toContain('wrong-pass-123');
    expect(JSON.stringify((err as Error).cause ?? '')).not.toContain('wrong-pass-123');
    expect(git.requestCounts.get(401) ?? 0).toBeGreaterThan(before);
    expect(git.repoUrl('r')).not.toMatch(/@/);
  });

  it('names a missing branch', async () => {
    const err = await fetchRevision({
      url: git.repoUrl('r'),
      ref: { branch: 'release' },
      workDir: join(dir, 'missing'),
      auth: { bearerToken: TOKEN },
    }).catch((e: unknown) => e);
    expect((err as GitFetchError).reason).toBe(GitFailure.notFound);
    expect((err as Error).message).toContain('branch release does not exist');
  });

  it('follows the exact branch and checks out the commit an annotated tag points to', async () => {
    await git.createRepo('refs');
    const main = await git.commitFiles('refs', { 'm.yaml': 'main\n' }, 'main');
    const dev = await git.commitFiles('refs', { 'm.yaml': 'dev\n' }, 'dev');
    await git.setBranch('refs', 'dev/main', dev);
    await git.setBranch('refs', 'main', main);
    const auth = { bearerToken: TOKEN };
    const work = join(dir, 'refs');
    const fetched = await fetchRevision({ url: git.repoUrl('refs'), ref: { branch: 'main' }, workDir: work, auth });
    expect(fetched.revision).toBe(main);
    expect(await readFile(join(work, 'm.yaml'), 'utf8')).toBe('main\n');
    const tagObject = await git.createTag('refs', 'v2', dev, 'release 2');
    expect(tagObject).not.toBe(dev);
    const tagged = await fetchRevision({ url: git.repoUrl('refs'), ref: { tag: 'v2' }, workDir: work, auth });
    expect(tagged.revision).toBe(dev);
    expect(await readFile(join(work, 'm.yaml'), 'utf8')).toBe('dev\n');
  });

  it('treats a URL that begins with "-" as a repository, never as a git option', async () => {
    const marker = join(dir, 'upload-pack-ran');
    const err = await fetchRevision({
      url: `--upload-pack=touch ${marker}`,
      ref: { branch: 'main' },
      workDir: join(dir, 'dash'),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitFetchError);
    expect((err as Error).message).toContain('git fetch --upload-pack=touch');
    expect(existsSync(marker)).toBe(false);
  });
});
