import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { loadHandoffPlan } from './handoff-plan.js';
import { planSecrets } from './manifest-secrets.js';
import { readManifestDir, validateManifestSet } from './manifest-set.js';

const tempDir = useTempDirs();

const fixtures = fileURLToPath(new URL('../../../test/fixtures/handoff/', import.meta.url));
const { plan } = loadHandoffPlan(`${fixtures}plan.yaml`);

describe('planSecrets', () => {
  it('turns the plan-declared secret files into push-only Secrets, never echoing their content in errors', () => {
    const dir = tempDir('secrets-');
    writeFileSync(join(dir, 'pull.yaml'), 'username: reader\npassword: s3cr3t-value\n');
    writeFileSync(join(dir, 'bad.yaml'), 'password: [s3cr3t-value]\n');
    const withFiles = {
      ...plan,
      pull: { ...plan.pull, credential: { secretName: 'gitops-pull-credential', fromFile: join(dir, 'pull.yaml') } },
      push: { ...plan.push, secrets: [{ name: 'webhook', fromFile: join(dir, 'bad.yaml') }] },
    };
    expect(() => planSecrets(withFiles)).toThrow(
      `push.secrets[0].fromFile: ${join(dir, 'bad.yaml')} must be a YAML map of key: string value`,
    );
    expect(() => planSecrets(withFiles)).not.toThrow(/s3cr3t/);
    const [pull] = planSecrets({ ...withFiles, push: { ...plan.push, secrets: [] } });
    expect(pull?.object).toMatchObject({
      kind: 'Secret',
      metadata: { name: 'gitops-pull-credential' },
      stringData: { password: 's3cr3t-value' },
    });
    // A manifest set whose only pull credential comes from the plan still validates, and the Secret is push-only.
    const set = validateManifestSet(
      readManifestDir(plan.push.manifests).filter((m) => m.object.kind !== 'Secret'),
      { ...withFiles, push: { ...plan.push, secrets: [] } },
    );
    expect(set.pushOnly).toEqual(['Secret/gitops-system/gitops-pull-credential']);
    expect(JSON.stringify(set.digest)).not.toContain('s3cr3t');
  });

  it('labels the pull credential as the plan says (Argo CD finds repository credentials by label)', () => {
    const dir = tempDir('secrets-');
    writeFileSync(join(dir, 'pull.yaml'), 'url: https://git.example/x.git\npassword: s3cr3t-value\n');
    const labels = { 'argocd.argoproj.io/secret-type': 'repository' };
    const [pull] = planSecrets({
      ...plan,
      pull: { ...plan.pull, credential: { secretName: 'repo', fromFile: join(dir, 'pull.yaml'), labels } },
    });
    expect(pull?.object.metadata).toEqual({ name: 'repo', labels });
  });
});
