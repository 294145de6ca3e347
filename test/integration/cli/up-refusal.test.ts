import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSigningKeyPair } from '@baton/audit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBaton } from '../../support/handoff-run.js';

// Issue 28: `baton up -o json` prints exactly one JSON object on stdout whatever happens, a refusal before anything is
// created included, so a pipeline can parse it; the message still goes to stderr and the exit code says which kind.
const FIXTURES = fileURLToPath(new URL('../../fixtures/handoff/', import.meta.url));
let dir: string;
let server: Server;
let port = 0;
let connections = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-up-refusal-'));
  cpSync(FIXTURES, dir, { recursive: true });
  mkdirSync(join(dir, 'audit'));
  await writeSigningKeyPair({
    signingKeyPath: join(dir, 'audit', 'signing.key'),
    keysPath: join(dir, 'audit', 'keys.yaml'),
  });
  // An API server address that accepts a connection and closes it at once: the preflight cannot read /version.
  server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  writeFileSync(
    join(dir, 'kubeconfig'),
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: false}}]\nusers: [{name: u, user: {token: not-a-real-token}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
  );
});

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const fail = (args: string[]) =>
  runBaton(args).then(
    () => {
      throw new Error(`baton ${args.join(' ')} exited 0`);
    },
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

/** `baton up -o json` of a plan in the fixture copy, against the API server address that closes every connection. */
const upOnUnreachableCluster = (plan: string) =>
  fail(['up', '--plan', join(dir, plan), '--kubeconfig', join(dir, 'kubeconfig'), '-o', 'json']);

describe('baton up -o json when the run is refused', () => {
  it('a plan that does not exist: one JSON object, outcome refused, errorCode config, exit 2', async () => {
    const e = await fail(['up', '--plan', join(dir, 'nope.yaml'), '-o', 'json']);
    expect(e.code).toBe(2);
    const o = JSON.parse(e.stdout) as { outcome: string; errorCode: string; error: string };
    expect(o.outcome).toBe('refused');
    expect(o.errorCode).toBe('config');
    expect(o.error).toContain('nope.yaml');
    expect(e.stderr).toContain('nope.yaml');
  });

  it('a signing key that is not there: refused before the cluster is contacted, naming the file and the fix, exit 2', async () => {
    writeFileSync(
      join(dir, 'no-key.yaml'),
      readFileSync(join(dir, 'plan.yaml'), 'utf8').replace('./audit/signing.key', './audit/missing.key'),
    );
    const before = connections;
    const e = await upOnUnreachableCluster('no-key.yaml');
    expect(e.code).toBe(2);
    const o = JSON.parse(e.stdout) as { outcome: string; errorCode: string; error: string };
    expect(o).toMatchObject({ outcome: 'refused', errorCode: 'config' });
    expect(o.error).toMatch(
      /cannot read signing key .*missing\.key: no such file; create one with `baton audit keygen --out <dir>`/,
    );
    expect(connections).toBe(before);
  });

  it('a cluster the preflight cannot reach: one JSON object naming it, exit 1, and no credential in it', async () => {
    const e = await upOnUnreachableCluster('plan.yaml');
    expect(e.code).toBe(1);
    const o = JSON.parse(e.stdout) as { outcome: string; errorCode: string; error: string };
    expect(o.outcome).toBe('refused');
    expect(o.errorCode).toBe('kube-api');
    expect(o.error).toContain('read the API server version');
    expect(`${e.stdout}${e.stderr}`).not.toContain('not-a-real-token');
  });
});
