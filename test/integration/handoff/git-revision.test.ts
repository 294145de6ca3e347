import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHandoffDeps, parseHandoffPlan, resolveGitRevision } from '@baton/core';
import { ConfigError } from '@baton/errors';
import type { KubeClients } from '@baton/kube';
import { type GitServer, startGitServer } from '@baton/testenv/git';
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

describe("an unpinned ref is resolved with the plan's pull credential (issue 28)", () => {
  const profile = fileURLToPath(new URL('../../../bootstrap-manifests/baton-controller', import.meta.url));
  const planWith = (password: string) => {
    writeFileSync(join(dir, 'pull.yaml'), `username: ${git.credentials.username}\npassword: ${password}\n`, {
      mode: 0o600,
    });
    return parseHandoffPlan(
      {
        apiVersion: 'baton.dev/v1alpha1',
        kind: 'HandoffPlan',
        cluster: { name: 'c' },
        push: { credential: 'bootstrap-token', profile: 'baton-controller', manifests: profile },
        pull: { credential: { fromFile: './pull.yaml' }, source: { url: git.repoUrl(repo), ref: 'main' } },
        audit: { logPath: './a.log', signingKeyPath: './a.key' },
      },
      join(dir, 'plan.yaml'),
      dir,
    );
  };

  it('baton up resolves main with the plan credential alone, no environment variable needed', async () => {
    const deps = createHandoffDeps(planWith(git.credentials.password), {} as KubeClients);
    expect(await deps.resolveRevision({ url: git.repoUrl(repo), ref: 'main' })).toBe(mainSha);
  });

  it('a wrong plan credential fails naming the URL and the ref, never the password', async () => {
    const deps = createHandoffDeps(planWith('not-the-password-8e1f'), {} as KubeClients);
    const err = await deps.resolveRevision({ url: git.repoUrl(repo), ref: 'main' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(`cannot resolve main of ${git.repoUrl(repo)}`);
    expect((err as Error).message).not.toContain('not-the-password-8e1f');
  });

  it('an explicit credential (BATON_GIT_USERNAME/PASSWORD in the CLI) wins over the plan', async () => {
    const deps = createHandoffDeps(planWith('not-the-password-8e1f'), {} as KubeClients, { gitAuth: auth() });
    expect(await deps.resolveRevision({ url: git.repoUrl(repo), ref: 'main' })).toBe(mainSha);
  });
});
