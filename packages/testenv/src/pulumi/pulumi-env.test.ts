import { describe, expect, it } from 'vitest';
import { describeArgs } from './pulumi-env.js';

describe('describeArgs (the command line a failed run may print)', () => {
  it('hides the value of `config set`, in any position', () => {
    expect(describeArgs(['config', 'set', '--secret', 'kubeconfig', 'apiVersion: v1 s3cr3t', '--stack', 'dev'])).toBe(
      'config set --secret kubeconfig <value> --stack <value>',
    );
    expect(describeArgs(['config', 'set', 'password', '-s3cr3t'])).not.toContain('s3cr3t');
  });

  it("hides set-all's values", () => {
    const line = describeArgs(['config', 'set-all', '--plaintext', 'a=1', '--secret', 'b=s3cr3t']);
    expect(line).toBe('config set-all --plaintext <value> --secret <value>');
  });

  it('keeps other commands whole', () => {
    expect(describeArgs(['preview', '--stack', 'dev'])).toBe('preview --stack dev');
  });
});
