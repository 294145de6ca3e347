import { ConfigError } from '@baton/errors';
import { describe, expect, test } from 'vitest';
import { checkEntry } from './check-entry.js';
import { createHandoffEvent, DSSE_CONTENT_TYPE, HANDOFF_EVENT_TYPE, serializeEntry } from './handoff-event.js';
import { type HandoffRecord, HandoffRecordSchema } from './handoff-record.js';
import { SigningKey } from './signing-key.js';
import { HANDOFF_PREDICATE_TYPE, IN_TOTO_STATEMENT_TYPE } from './statement.js';
import { synthRecords } from './synth.js';
import { TrustedKeySet } from './trusted-keys.js';

const key = SigningKey.fromSeed('test-key', Buffer.alloc(32, 1));
const other = SigningKey.fromSeed('other-key', Buffer.alloc(32, 2));
const keys = new TrustedKeySet({ origin: 'test/log', keys: [{ key: key.verifierKey }] });
const [handedOff, ...rest] = [...synthRecords(200, { seed: 7 })];
const failed = rest.find((r) => r.outcome === 'failed')!;
const RECORDED = '2027-01-01T00:00:00.000Z';

async function line(record: HandoffRecord, index = 0, signer: SigningKey | SigningKey[] = key): Promise<Buffer> {
  return Buffer.from(serializeEntry(await createHandoffEvent(record, signer), index, RECORDED));
}

function edit(buf: Buffer, fn: (entry: Record<string, unknown>) => void): Buffer {
  const entry = JSON.parse(buf.toString()) as Record<string, unknown>;
  fn(entry);
  return Buffer.from(JSON.stringify(entry));
}

describe('synthetic records', () => {
  test('every synthetic record is valid, and outcomes, failed steps and clusters vary', () => {
    const records = [...synthRecords(500, { seed: 3 })];
    for (const r of records) expect(HandoffRecordSchema.safeParse(r).error).toBeUndefined();
    expect(new Set(records.map((r) => r.outcome))).toEqual(new Set(['handed-off', 'failed', 'aborted']));
    expect(new Set(records.map((r) => r.cluster.name)).size).toBeGreaterThan(10);
    expect(records.filter((r) => r.failedStep).every((r) => r.outcome !== 'handed-off')).toBe(true);
  });

  test('the same seed gives the same records', () => {
    expect([...synthRecords(5, { seed: 9 })]).toEqual([...synthRecords(5, { seed: 9 })]);
    expect([...synthRecords(5, { seed: 9 })]).not.toEqual([...synthRecords(5, { seed: 10 })]);
  });
});

describe('handoff record rules', () => {
  const mutate = (fn: (r: HandoffRecord) => void): HandoffRecord => {
    const r = structuredClone(handedOff!);
    fn(r);
    return r;
  };

  test.each([
    [
      'a handed-off run without revocation proof',
      (r: HandoffRecord) => delete (r as { revocation?: unknown }).revocation,
      /revocation: is required/,
    ],
    [
      'a handed-off run whose token still authenticates',
      (r: HandoffRecord) => {
        r.revocation!.tokenReview.authenticated = true;
      },
      /must be false/,
    ],
    [
      'a handed-off run whose revoked token got 403',
      (r: HandoffRecord) => {
        r.revocation!.directRequest.statusCode = 403;
      },
      /must be 401/,
    ],
    [
      'a failed run without failedStep',
      (r: HandoffRecord) => {
        r.outcome = 'failed';
      },
      /failedStep: is required when the outcome is failed/,
    ],
    [
      'live seconds that contradict the times',
      (r: HandoffRecord) => {
        r.credential!.liveSeconds += 30;
      },
      /credential.liveSeconds: must be/,
    ],
    [
      'an unknown field',
      (r: HandoffRecord) => {
        (r as Record<string, unknown>).tokne = 'x';
      },
      /Unrecognized key/,
    ],
    [
      'a bad fingerprint',
      (r: HandoffRecord) => {
        r.credential!.fingerprint = 'abc';
      },
      /credential.fingerprint: must be sha256/,
    ],
  ])('createHandoffEvent rejects %s with a ConfigError naming the field', async (_, fn, message) => {
    const r = mutate(fn);
    await expect(createHandoffEvent(r, key)).rejects.toThrow(ConfigError);
    await expect(createHandoffEvent(r, key)).rejects.toThrow(message);
  });

  test('a record carrying a token is refused, and the message names the field but not the token', async () => {
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl';
    const r = mutate((x) => {
      x.error = `push failed: Authorization: Bearer ${jwt}`;
      x.outcome = 'failed';
      x.failedStep = 'push';
    });
    let message = '';
    try {
      await createHandoffEvent(r, key);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/handoff record error: looks like a credential/);
    expect(message).not.toContain('eyJ');
  });
});

describe('handoff events', () => {
  /** The handed-off record with `push` changed. */
  const withPush = (change: Partial<HandoffRecord['plan']['push']>): HandoffRecord => ({
    ...handedOff!,
    plan: { ...handedOff!.plan, push: { ...handedOff!.plan.push, ...change } },
  });
  /** The statement of `record`'s log line, after the record and the line were checked. */
  const statementOf = async (record: HandoffRecord) => {
    expect(HandoffRecordSchema.safeParse(record).error).toBeUndefined();
    const l = await line(record, 0);
    expect(checkEntry(l, keys).problem).toBeUndefined();
    const entry = JSON.parse(l.toString()) as { data: { payload: string } };
    return JSON.parse(Buffer.from(entry.data.payload, 'base64').toString());
  };

  test('an image pinned by a release tag (no published digest) is recorded without a digest, and verifies', async () => {
    const { push } = handedOff!.plan;
    const record = withPush({
      controller: { ...push.controller, image: 'quay.io/argoproj/argocd:v3.6.1', imageDigest: undefined },
    });
    delete (record.plan.push.controller as { imageDigest?: string }).imageDigest;
    const statement = await statementOf(record);
    expect(statement.subject.map((x: { name: string }) => x.name)).toEqual([
      `bootstrap-manifests/${push.profile}`,
      handedOff!.plan.pull.source.url,
    ]);
  });

  test('images a rule let through unsigned are recorded with their reason, and are subjects after the verified; a verified provenance is recorded', async () => {
    const d = (c: string) => `sha256:${c.repeat(64)}`;
    const statement = await statementOf(
      withPush({
        images: {
          verification: 'verified',
          verified: [
            {
              image: `quay.io/argoproj/argocd@${d('a')}`,
              digest: d('a'),
              signedBy: 'w from i',
              provenance: { builder: 'https://ci.example/b@v1', source: 'git+https://x/y', attestation: d('c') },
            },
          ],
          unsigned: [{ image: `docker.io/library/redis@${d('b')}`, digest: d('b'), reason: 'not signed upstream' }],
        },
      }),
    );
    expect(statement.subject.slice(1, 3)).toEqual([
      { name: 'quay.io/argoproj/argocd', digest: { sha256: 'a'.repeat(64) } },
      { name: 'docker.io/library/redis', digest: { sha256: 'b'.repeat(64) } },
    ]);
    expect(statement.predicate.plan.push.images.unsigned[0].reason).toBe('not signed upstream');
    expect(statement.predicate.plan.push.images.verified[0].provenance.builder).toBe('https://ci.example/b@v1');
  });

  test('an event is a CloudEvent whose data is a DSSE envelope around an in-toto statement about the install', async () => {
    const event = await createHandoffEvent(handedOff!, key);
    expect(event).toMatchObject({
      specversion: '1.0',
      id: handedOff!.runId,
      source: `urn:baton:${handedOff!.actor.via}`,
      type: HANDOFF_EVENT_TYPE,
      subject: `cluster/${handedOff!.cluster.name}`,
      time: handedOff!.finishedAt,
      datacontenttype: DSSE_CONTENT_TYPE,
    });
    const statement = JSON.parse(Buffer.from(event.data.payload, 'base64').toString());
    expect(statement._type).toBe(IN_TOTO_STATEMENT_TYPE);
    expect(statement.predicateType).toBe(HANDOFF_PREDICATE_TYPE);
    expect(statement.subject.map((s: { digest: object }) => Object.keys(s.digest)[0])).toEqual([
      'sha256',
      'sha256',
      'gitCommit',
    ]);
    expect(statement.predicate).toEqual(handedOff);
  });

  test('a log line has a fixed key order, so the same event at the same place gives the same bytes', async () => {
    const event = await createHandoffEvent(failed, key);
    const a = serializeEntry(event, 3, RECORDED);
    expect(serializeEntry(structuredClone(event), 3, RECORDED)).toBe(a);
    expect(Object.keys(JSON.parse(a))).toEqual([
      'specversion',
      'id',
      'source',
      'type',
      'subject',
      'time',
      'datacontenttype',
      'recordedtime',
      'batonindex',
      'data',
    ]);
  });
});

describe('checking one entry', () => {
  test('a good entry passes and reports its index and recorded time', async () => {
    const check = checkEntry(await line(handedOff!, 4), keys);
    expect(check).toEqual({ index: 4, recordedMs: Date.parse(RECORDED), problem: undefined });
  });

  test('an envelope with fields DSSE does not define still verifies (consumers MUST ignore unknown fields)', async () => {
    const l = edit(await line(handedOff!, 2), (entry) => {
      const env = entry.data as { signatures: Record<string, unknown>[] } & Record<string, unknown>;
      env.x_vendor = { note: 'added by another producer' };
      env.signatures[0]!.cert = 'unused';
    });
    expect(checkEntry(l, keys).problem).toBeUndefined();
    // The signature still covers the payload: a changed payload fails whatever else the envelope holds.
    const forged = edit(l, (entry) => {
      const env = entry.data as { payload: string };
      env.payload = Buffer.from('{}').toString('base64');
    });
    expect(checkEntry(forged, keys).problem).toBeDefined();
  });

  test('an entry dual-signed during key rotation verifies with either key trusted', async () => {
    const l = await line(handedOff!, 0, [other, key]);
    expect(checkEntry(l, keys).problem).toBeUndefined();
    expect(
      checkEntry(l, new TrustedKeySet({ origin: 'o', keys: [{ key: other.verifierKey }] })).problem,
    ).toBeUndefined();
  });

  test.each([
    ['bytes that are not UTF-8', () => Buffer.from([0xff, 0xfe]), 'corrupt', /UTF-8/],
    ['a line that is not JSON', () => Buffer.from('{"specversion":'), 'corrupt', /not JSON/],
    ['JSON that is not an entry', () => Buffer.from('{"a":1}'), 'corrupt', /not a handoff log entry/],
    [
      'a payload changed after signing',
      async () =>
        edit(await line(handedOff!), (e) => {
          const d = e.data as { payload: string };
          const stmt = JSON.parse(Buffer.from(d.payload, 'base64').toString());
          stmt.predicate.outcome = 'failed';
          d.payload = Buffer.from(JSON.stringify(stmt)).toString('base64');
        }),
      'signature',
      /does not verify/,
    ],
    [
      'an envelope subject that disagrees with the signed record',
      async () =>
        edit(await line(handedOff!), (e) => {
          e.subject = 'cluster/other';
        }),
      'binding',
      /envelope subject/,
    ],
    [
      'a signature by an untrusted key',
      async () => line(handedOff!, 0, other),
      'unknown-key',
      /not trusted \(other-key\+/,
    ],
    [
      'an event dated after it was recorded',
      async () =>
        edit(await line(handedOff!), (e) => {
          e.recordedtime = '2020-01-01T00:00:00.000Z';
        }),
      'time-order',
      /after it was recorded/,
    ],
  ])('%s is reported as %s', async (_, make, kind, message) => {
    const check = checkEntry(await make(), keys);
    expect(check.problem?.kind).toBe(kind);
    expect(check.problem?.message).toMatch(message);
  });

  test('a trusted key outside its validity window does not count', async () => {
    const rotated = new TrustedKeySet({
      origin: 'o',
      keys: [{ key: key.verifierKey, validUntil: '2025-01-01T00:00:00Z' }],
    });
    const check = checkEntry(await line(handedOff!), rotated);
    expect(check.problem?.kind).toBe('unknown-key');
    expect(check.problem?.message).toMatch(/trusted only until 2025-01-01T00:00:00.000Z, but the event is dated 2026/);
  });
});
