// `pnpm bench:images [--count N]`: what verifying an image's signature costs a handoff, per kind of signature (issue
// 30). Writes bench/results/images.json. Against Debian's docker-registry on loopback (Distribution 2.8: no referrers
// API, so every lookup goes through the referrers tag, as on ghcr.io), each run with a fresh RegistryClient (nothing
// cached), medians of N:
//   - baseline (same run): reading the image's manifest by digest, what any pull does;
//   - key: a cosign v3 bundle signed by an Ed25519 key (what pnpm image:build --sign-key attaches);
//   - keyless: a cosign v3 bundle with a Fulcio-style certificate and Rekor entry, verified against a trusted root;
//   - keyless-cosign-v2: the same identity in cosign v2's `sha256-<hex>.sig` tag (one more lookup);
//   - key+provenance: the key's signature and a signed SLSA provenance v1 attestation beside it, with a policy that
//     asks for a trusted builder (the attestation's referrer and bundle read, and the predicate checked);
// plus loading a keyless policy (reading the trusted root; the first load also imports sigstore-js) and each
// signature's size. The certificate authority and logs are the test bed's private Sigstore.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attestImage,
  keylessTrust,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  SigningKey,
  signImage,
  TrustedKeySet,
} from '@baton/audit';
import { type ImageTrustPolicy, parseImageRef, RegistryClient, verifyImages } from '@baton/core';
import {
  IMAGE_BUILDER_ID,
  PROVENANCE_ANNOTATIONS,
  SIGNATURE_ANNOTATIONS,
  SLSA_PROVENANCE_PREDICATE_TYPE,
} from '@baton/image';
import { createLocalSigstore, putCosignV2Signature, startRegistry, writeTestImage } from '@baton/testenv/images';
import { median, numberFlag, round } from './stats.js';

const COUNT = numberFlag(process.argv.slice(2), '--count', 60);
const resultPath = new URL('./results/images.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`[bench:images] ${s}\n`);
const NAME = 'ghcr.io/bench/app';
const SIGNER = {
  issuer: 'https://token.actions.githubusercontent.com',
  subject: 'https://github.com/bench/app/.github/workflows/release.yml@refs/tags/v1.0.0',
};

const dir = mkdtempSync(join(tmpdir(), 'baton-bench-images-'));
const registry = await startRegistry({ dir: join(dir, 'registry') });
try {
  const load = loadavg()[0]!;
  log(`${COUNT} verifications per kind; load average ${load.toFixed(1)}`);
  const push = (tag: string) => registry.push(writeTestImage(dir, tag, `bench ${tag}`).layout, 'bench/app', tag);
  const key = SigningKey.fromSeed('bench.baton.dev/release', Buffer.alloc(32, 7));
  const sigstore = await createLocalSigstore();
  const sizes: Record<string, number> = {};

  const keyDigest = await push('key');
  const keyBundle = Buffer.from(JSON.stringify(await signImage(NAME, keyDigest, key)));
  await registry.attach('bench/app', keyDigest, keyBundle, SIGSTORE_BUNDLE_MEDIA_TYPE, SIGNATURE_ANNOTATIONS);
  sizes.key = keyBundle.length;

  // The same key's signature of another image, and its provenance: what pnpm image:build --sign-key attaches.
  const provenanceDigest = await push('provenance');
  await registry.attach(
    'bench/app',
    provenanceDigest,
    Buffer.from(JSON.stringify(await signImage(NAME, provenanceDigest, key))),
    SIGSTORE_BUNDLE_MEDIA_TYPE,
    SIGNATURE_ANNOTATIONS,
  );
  const predicate = {
    buildDefinition: { buildType: 'https://baton.dev/image-build/v1', externalParameters: {} },
    runDetails: { builder: { id: IMAGE_BUILDER_ID } },
  };
  const attestation = Buffer.from(
    JSON.stringify(await attestImage(NAME, provenanceDigest, SLSA_PROVENANCE_PREDICATE_TYPE, predicate, key)),
  );
  await registry.attach('bench/app', provenanceDigest, attestation, SIGSTORE_BUNDLE_MEDIA_TYPE, PROVENANCE_ANNOTATIONS);
  sizes['key+provenance'] = keyBundle.length + attestation.length;

  const keylessDigest = await push('keyless');
  const keylessBundle = Buffer.from(JSON.stringify(await sigstore.signImage(NAME, keylessDigest, SIGNER)));
  await registry.attach('bench/app', keylessDigest, keylessBundle, SIGSTORE_BUNDLE_MEDIA_TYPE, SIGNATURE_ANNOTATIONS);
  sizes.keyless = keylessBundle.length;

  const v2Digest = await push('cosign-v2');
  const v2 = await sigstore.signImageCosignV2(NAME, v2Digest, SIGNER);
  await putCosignV2Signature(registry.host, 'bench/app', v2Digest, v2.payload, v2.annotations);
  sizes['keyless-cosign-v2'] = v2.payload.length + JSON.stringify(v2.annotations).length;

  const rootText = JSON.stringify(sigstore.trustedRoot);
  const t0 = performance.now();
  const trust = await keylessTrust(rootText, 'trusted_root.json', [SIGNER]);
  const firstPolicyLoadMs = performance.now() - t0;
  const policyLoads: number[] = [];
  for (let i = 0; i < COUNT; i++) {
    const t = performance.now();
    await keylessTrust(rootText, 'trusted_root.json', [SIGNER]);
    policyLoads.push(performance.now() - t);
  }

  const keyPolicy: ImageTrustPolicy = {
    source: 'bench',
    keys: new TrustedKeySet({ origin: 'bench.baton.dev/release', keys: [{ key: key.verifierKey }] }),
  };
  const keylessPolicy: ImageTrustPolicy = { source: 'bench', keyless: trust };
  const provenancePolicy: ImageTrustPolicy = { ...keyPolicy, provenance: { builders: [IMAGE_BUILDER_ID] } };
  const client = () => new RegistryClient({ mirrors: { 'ghcr.io': `http://${registry.host}` } });

  const time = async (name: string, run: () => Promise<unknown>) => {
    await run(); // one warm-up: the first call loads code paths
    const ms: number[] = [];
    for (let i = 0; i < COUNT; i++) {
      const t = performance.now();
      await run();
      ms.push(performance.now() - t);
    }
    const result = {
      medianMs: round(median(ms), 2),
      p90Ms: round([...ms].sort((a, b) => a - b)[Math.floor(ms.length * 0.9)]!, 2),
    };
    log(`${name}: ${JSON.stringify(result)}`);
    return result;
  };
  const ref = (digest: string) => {
    const r = parseImageRef(`${NAME}@${digest}`);
    if (typeof r === 'string') throw new Error(r);
    return r;
  };

  const baseline = await time('baseline (manifest read)', () => client().manifest(ref(keyDigest), keyDigest));
  const kinds = {
    key: await time('key', () => verifyImages([`${NAME}@${keyDigest}`], keyPolicy, client())),
    keyless: await time('keyless', () => verifyImages([`${NAME}@${keylessDigest}`], keylessPolicy, client())),
    'keyless-cosign-v2': await time('keyless-cosign-v2', () =>
      verifyImages([`${NAME}@${v2Digest}`], keylessPolicy, client()),
    ),
    'key+provenance': await time('key+provenance', async () => {
      const v = await verifyImages([`${NAME}@${provenanceDigest}`], provenancePolicy, client());
      if (v.verified[0]?.provenance?.builder !== IMAGE_BUILDER_ID) throw new Error('the provenance was not checked');
    }),
  };

  const result = {
    benchmark: 'images',
    measuredAt: new Date().toISOString(),
    machine: { cores: cpus().length, loadAverageAtStart: round(load, 2), loadAverageAtEnd: round(loadavg()[0]!, 2) },
    versions: { node: process.version },
    count: COUNT,
    baseline: { 'manifest-read': baseline },
    kinds,
    overBaselineMs: Object.fromEntries(
      Object.entries(kinds).map(([k, v]) => [k, round(v.medianMs - baseline.medianMs, 2)]),
    ),
    keylessPolicyLoadMs: { first: round(firstPolicyLoadMs, 2), median: round(median(policyLoads), 2) },
    signatureBytes: sizes,
    notes:
      'Per image, a fresh RegistryClient each run (an anonymous registry on loopback, no token round trips). A handoff verifies each image of its push set once, in order; a remote registry adds its round trips (key and keyless: referrers API or tag, referrer manifest, bundle blob; cosign v2: those lookups, then the .sig tag and its payload; key+provenance: those of the signature, then the referrer manifest and bundle of the attestation, and the predicate checked; its signatureBytes is both bundles). The first keyless policy load includes importing sigstore-js (lazily, only when a plan or profile names keyless identities).',
  };
  writeFileSync(resultPath, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await registry.stop();
  rmSync(dir, { recursive: true, force: true });
}
