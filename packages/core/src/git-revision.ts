import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ConfigError } from '@baton/errors';

const execFileAsync = promisify(execFile);

/** Basic-auth credentials for a Git server; passed through the environment, never argv or the URL. */
export interface GitAuth {
  readonly username: string;
  readonly password: string;
}

/**
 * Resolves `ref` of the repository at `url` to a commit id with `git ls-remote`.
 * @throws {ConfigError} naming the URL and ref when git fails or the ref does not exist.
 */
export async function resolveGitRevision(
  source: { readonly url: string; readonly ref: string },
  auth?: GitAuth,
  gitPath = 'git',
): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0' };
  if (auth) {
    const basic = Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    });
  }
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(gitPath, ['ls-remote', source.url, source.ref], { env }));
  } catch (err) {
    // git's message may quote the request; keep only its first line, which names the URL, never the header.
    const first = ((err as { stderr?: string }).stderr ?? '').split('\n')[0] ?? '';
    throw new ConfigError(
      `cannot resolve ${source.ref} of ${source.url}: ${first}; check pull.source or pin pull.source.revision`,
      { cause: err },
    );
  }
  const line = stdout.split('\n').find((l) => /\trefs\/(heads|tags)\//.test(l) || l.endsWith(`\t${source.ref}`));
  const sha = line?.split('\t')[0];
  if (!sha)
    throw new ConfigError(`${source.url} has no ref ${source.ref}; check pull.source.ref or pin pull.source.revision`);
  return sha;
}
