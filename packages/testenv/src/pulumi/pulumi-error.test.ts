import { BuildError, ConfigError, KubeApiError, ProcessError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { explainPulumiError } from './pulumi-error.js';

/** Shaped like Automation API's CommandError: the CLI's stderr is in the message. */
function commandError(name: string, stderr: string): Error {
  const err = new Error(`code: 255\n stdout: \n stderr: ${stderr}`);
  err.name = name;
  return err;
}

describe('explainPulumiError', () => {
  it('names pulumi cancel for a stack locked by a crashed run', () => {
    const err = explainPulumiError(
      commandError(
        'ConcurrentUpdateError',
        'error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.',
      ),
      { stack: 'dev', operation: 'up' },
    );
    expect(err).toBeInstanceOf(ProcessError);
    expect(err.message).toMatch(
      /^pulumi up of stack "dev" failed: the stack is locked .*pulumi cancel --yes.*stack export/,
    );
  });

  it('says the passphrase is wrong without repeating it', () => {
    const err = explainPulumiError(
      commandError('CommandError', 'error: constructing secrets manager of type "passphrase": incorrect passphrase'),
      { stack: 'dev', operation: 'up' },
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('the secrets passphrase is wrong');
  });

  it('names the missing plugin and how to build it', () => {
    const err = explainPulumiError(
      commandError('CommandError', "error: no resource plugin 'pulumi-resource-kubernetes' found in the workspace"),
      { operation: 'up', home: '/tmp/x/home' },
    );
    expect(err).toBeInstanceOf(BuildError);
    expect(err.message).toMatch(
      /pulumi-resource-kubernetes is not installed .*\/tmp\/x\/home.*pnpm baton testenv build/,
    );
  });

  it('says how to get the Node.js language host back when the CLI cannot find it', () => {
    const err = explainPulumiError(
      commandError(
        'CommandError',
        "error: failed to load language plugin nodejs: no language plugin 'pulumi-language-nodejs' found in the workspace",
      ),
      { operation: 'preview' },
    );
    expect(err).toBeInstanceOf(BuildError);
    expect(err.message).toMatch(
      /language host \(pulumi-language-nodejs\) is not next to the pulumi CLI.*pnpm baton testenv build/,
    );
  });

  it('names the unreachable server', () => {
    const err = explainPulumiError(
      commandError(
        'CommandError',
        'error: configured Kubernetes cluster is unreachable: Get "https://127.0.0.1:1/version": dial tcp 127.0.0.1:1: connect: connection refused',
      ),
      { operation: 'up', server: 'https://127.0.0.1:1' },
    );
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.message).toContain('cannot reach the cluster at https://127.0.0.1:1');
  });

  it('keeps the CLI error lines of anything else, with the original as cause', () => {
    const cause = commandError('CommandError', 'Updating (dev):\nerror: something else broke\n');
    const err = explainPulumiError(cause, { operation: 'preview' });
    expect(err).toBeInstanceOf(ProcessError);
    expect(err.message).toBe('pulumi preview failed: error: something else broke');
    expect(err.cause).toBe(cause);
  });
});
