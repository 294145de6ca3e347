import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { afterAll, describe, expect, test } from 'vitest';
import { type CredentialHelperRunner, dockerConfigCredentials } from './registry-credentials.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-registry-credentials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** Writes a Docker config under a fresh DOCKER_CONFIG directory and returns that directory. */
function dockerConfig(config: unknown): string {
  const d = mkdtempSync(join(dir, 'cfg-'));
  writeFileSync(join(d, 'config.json'), typeof config === 'string' ? config : JSON.stringify(config));
  return d;
}

describe('dockerConfigCredentials', () => {
  test('reads auths as docker login writes them: user:password in base64, fields, or an identity token', async () => {
    const d = dockerConfig({
      auths: {
        'https://ghcr.io': { auth: b64('alice:gh-pass:with-colon') },
        'harbor.internal:8443': { username: 'bob', password: 'harbor-pass' },
        'quay.io/v2/': { identitytoken: 'refresh-me' },
        'https://index.docker.io/v1/': { auth: b64('carol:hub-pass') },
      },
    });
    const creds = dockerConfigCredentials({ env: { DOCKER_CONFIG: d } });
    expect(creds.file).toBe(join(d, 'config.json'));
    const source = `${join(d, 'config.json')} (auths)`;
    expect(await creds.find('ghcr.io')).toEqual({
      login: { kind: 'basic', username: 'alice', password: 'gh-pass:with-colon' },
      source,
    });
    expect((await creds.find('harbor.internal:8443'))?.login).toEqual({
      kind: 'basic',
      username: 'bob',
      password: 'harbor-pass',
    });
    expect((await creds.find('quay.io'))?.login).toEqual({ kind: 'identity-token', token: 'refresh-me' });
    // Docker Hub's API host finds the login stored under the v1 index.
    expect((await creds.find('registry-1.docker.io'))?.login).toMatchObject({ username: 'carol' });
    expect(await creds.find('public.ecr.aws')).toBeUndefined();
  });

  test('asks a credential helper first (credHelpers, then credsStore), as the Docker CLI does', async () => {
    const d = dockerConfig({
      credHelpers: { '123.dkr.ecr.eu-west-1.amazonaws.com': 'ecr-login' },
      credsStore: 'pass',
      auths: { 'ghcr.io': { auth: b64('alice:from-file') }, 'gitlab.example': { auth: b64('dan:file-pass') } },
    });
    const asked: string[] = [];
    const runHelper: CredentialHelperRunner = async (helper, host) => {
      asked.push(`${helper} ${host}`);
      if (helper === 'ecr-login') return JSON.stringify({ ServerURL: host, Username: 'AWS', Secret: 'ecr-token' });
      if (host === 'ghcr.io') return JSON.stringify({ ServerURL: host, Username: '<token>', Secret: 'gh-refresh' });
      return undefined;
    };
    const creds = dockerConfigCredentials({ env: { DOCKER_CONFIG: d }, runHelper });
    expect(await creds.find('123.dkr.ecr.eu-west-1.amazonaws.com')).toEqual({
      login: { kind: 'basic', username: 'AWS', password: 'ecr-token' },
      source: 'docker-credential-ecr-login',
    });
    expect(await creds.find('ghcr.io')).toEqual({
      login: { kind: 'identity-token', token: 'gh-refresh' },
      source: 'docker-credential-pass',
    });
    // The store has none for this host: the file's entry is used.
    expect((await creds.find('gitlab.example'))?.login).toMatchObject({ username: 'dan' });
    expect(asked).toEqual(['ecr-login 123.dkr.ecr.eu-west-1.amazonaws.com', 'pass ghcr.io', 'pass gitlab.example']);
  });

  test('runs a real helper from PATH, and says which one failed', async () => {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const helper = join(bin, 'docker-credential-batontest');
    writeFileSync(
      helper,
      '#!/bin/sh\nread host\ncase "$host" in\n  ok.example) echo \'{"ServerURL":"ok.example","Username":"eve","Secret":"helper-pass"}\' ;;\n  broken.example) echo boom >&2; exit 3 ;;\n  *) echo "credentials not found in native keychain"; exit 1 ;;\nesac\n',
    );
    chmodSync(helper, 0o755);
    const d = dockerConfig({ credsStore: 'batontest', credHelpers: { 'missing.example': 'nosuchhelper' } });
    const creds = dockerConfigCredentials({ env: { DOCKER_CONFIG: d, PATH: `${bin}:/usr/bin:/bin` } });
    expect((await creds.find('ok.example'))?.login).toEqual({
      kind: 'basic',
      username: 'eve',
      password: 'helper-pass',
    });
    expect(await creds.find('elsewhere.example')).toBeUndefined();
    await expect(creds.find('broken.example')).rejects.toThrow(
      new ConfigError('docker-credential-batontest get failed for broken.example (exit 3); run it by hand to see why'),
    );
    await expect(creds.find('missing.example')).rejects.toThrow(
      'docker-credential-nosuchhelper is not on PATH, and the Docker config names it for missing.example',
    );
  });

  test('without a Docker config reads anonymously; a named one must exist; a broken one is named, never quoted', async () => {
    const home = mkdtempSync(join(dir, 'home-'));
    expect(await dockerConfigCredentials({ env: { HOME: home } }).find('ghcr.io')).toBeUndefined();
    const named = join(dir, 'no-such-config.json');
    await expect(dockerConfigCredentials({ file: named }).find('ghcr.io')).rejects.toThrow(
      `push.images.credentials: cannot read ${named} (ENOENT); point it at a Docker config.json (what \`docker login\` writes)`,
    );
    const broken = dockerConfig('{"auths": {"ghcr.io": {"auth": "c2VjcmV0LXBhc3M=" ');
    const err = await dockerConfigCredentials({ env: { DOCKER_CONFIG: broken } })
      .find('ghcr.io')
      .catch((e: Error) => e);
    expect((err as Error).message).toBe(
      `${join(broken, 'config.json')}: not a Docker config (not a JSON object); fix or remove it, or name another with push.images.credentials`,
    );
    const noColon = dockerConfig({ auths: { 'ghcr.io': { auth: b64('just-a-secret') } } });
    const err2 = await dockerConfigCredentials({ env: { DOCKER_CONFIG: noColon } })
      .find('ghcr.io')
      .catch((e: Error) => e);
    expect((err2 as Error).message).toBe(
      `${join(noColon, 'config.json')}: auths.ghcr.io.auth is not base64 of user:password; run \`docker login ghcr.io\` again`,
    );
    expect(`${(err as Error).message} ${(err2 as Error).message}`).not.toMatch(/secret/);
    mkdirSync(join(home, '.docker'));
    writeFileSync(join(home, '.docker', 'config.json'), JSON.stringify({ auths: { 'ghcr.io': { auth: b64('h:p') } } }));
    expect((await dockerConfigCredentials({ env: { HOME: home } }).find('ghcr.io'))?.source).toBe(
      `${join(home, '.docker', 'config.json')} (auths)`,
    );
  });
});
