import { describe, expect, test } from 'vitest';
import {
  consistencyProof,
  inclusionProof,
  rootFromInclusionProof,
  verifyConsistencyProof,
  verifyInclusionProof,
} from './merkle-proof.js';
import { EMPTY_ROOT, HASH_BYTES, hashLeaf, subtreeRoot } from './merkle-tree.js';
import { packLeaves, RFC6962_LEAVES, RFC6962_ROOTS } from './testing/rfc6962-vectors.js';

const h = (hex: string) => Buffer.from(hex, 'hex');
const root = (n: number) => h(RFC6962_ROOTS[n - 1]!);

// transparency-dev/merkle proof/verify_test.go: inclusion proofs (leaf index 0-based) and consistency proofs over
// the RFC 6962 test leaves.
const INCLUSION = [
  {
    index: 0,
    size: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  { index: 2, size: 3, proof: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  {
    index: 1,
    size: 5,
    proof: [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
];
const CONSISTENCY = [
  {
    oldSize: 1,
    newSize: 8,
    proof: [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  },
  {
    oldSize: 6,
    newSize: 8,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
  {
    oldSize: 2,
    newSize: 5,
    proof: [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  },
  {
    oldSize: 6,
    newSize: 7,
    proof: [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  },
];

const leaves = packLeaves(RFC6962_LEAVES);
const leafHash = (i: number) => leaves.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES);

describe('RFC 9162 inclusion proofs', () => {
  test.each(INCLUSION)(
    'leaf $index in a tree of $size matches the published proof and verifies',
    ({ index, size, proof }) => {
      expect(inclusionProof(leaves, index, size).map((p) => p.toString('hex'))).toEqual(proof);
      expect(verifyInclusionProof(index, size, leafHash(index), proof.map(h), root(size))).toBe(true);
    },
  );

  test.each(INCLUSION)('a corrupted proof for leaf $index of $size does not verify', ({ index, size, proof }) => {
    const p = proof.map(h);
    const bad: [number, number, Buffer, Buffer[]][] = [
      [index + 1, size, leafHash(index), p],
      [index, size * 2, leafHash(index), p],
      [index, size, hashLeaf(Buffer.from('WrongLeaf')), p],
      [index, size, leafHash(index), [...p, root(size)]],
      [index, size, leafHash(index), [root(size), ...p]],
      [index, size, leafHash(index), p.slice(0, -1)],
      ...p.map((_, i): [number, number, Buffer, Buffer[]] => {
        const flipped = p.map((x) => Buffer.from(x));
        flipped[i]![0]! ^= 8;
        return [index, size, leafHash(index), flipped];
      }),
    ];
    for (const [i, n, leaf, proofArg] of bad)
      expect(verifyInclusionProof(i, n, leaf, proofArg, root(size))).toBe(false);
    expect(verifyInclusionProof(index, size, leafHash(index), p, EMPTY_ROOT)).toBe(false);
  });

  test('every leaf of every tree up to 33 leaves proves into its root', () => {
    const data = packLeaves(Array.from({ length: 33 }, (_, i) => Buffer.from([i])));
    for (let size = 1; size <= 33; size++) {
      const r = subtreeRoot(data, 0, size);
      for (let i = 0; i < size; i++) {
        const proof = inclusionProof(data, i, size);
        expect(
          rootFromInclusionProof(i, size, data.subarray(i * 32, i * 32 + 32), proof)?.equals(r),
          `${i}/${size}`,
        ).toBe(true);
      }
    }
  });

  test('out-of-range and malformed inputs give false, never an exception', () => {
    expect(verifyInclusionProof(0, 0, leafHash(0), [], root(1))).toBe(false);
    expect(verifyInclusionProof(-1, 8, leafHash(0), [], root(8))).toBe(false);
    expect(verifyInclusionProof(0, 8, Buffer.alloc(3), [], root(8))).toBe(false);
    expect(verifyInclusionProof(0, 8, leafHash(0), [Buffer.alloc(31)], root(8))).toBe(false);
    expect(() => inclusionProof(leaves, 8, 8)).toThrow(RangeError);
  });
});

describe('RFC 9162 consistency proofs', () => {
  test.each(CONSISTENCY)(
    '$oldSize → $newSize matches the published proof and verifies',
    ({ oldSize, newSize, proof }) => {
      expect(consistencyProof(leaves, oldSize, newSize).map((p) => p.toString('hex'))).toEqual(proof);
      expect(verifyConsistencyProof(oldSize, newSize, proof.map(h), root(oldSize), root(newSize))).toBe(true);
    },
  );

  test.each(CONSISTENCY)('a corrupted proof $oldSize → $newSize does not verify', ({ oldSize, newSize, proof }) => {
    const p = proof.map(h);
    const r1 = root(oldSize);
    const r2 = root(newSize);
    expect(verifyConsistencyProof(oldSize - 1, newSize, p, r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize + 1, newSize, p, r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize * 2, p, r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize, p, r2, r1)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize, [], r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize, p.slice(0, -1), r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize, [...p, r1], r1, r2)).toBe(false);
    expect(verifyConsistencyProof(oldSize, newSize, [p[0]!, ...p], r1, r2)).toBe(false);
    for (let i = 0; i < p.length; i++) {
      const flipped = p.map((x) => Buffer.from(x));
      flipped[i]![0]! ^= 16;
      expect(verifyConsistencyProof(oldSize, newSize, flipped, r1, r2)).toBe(false);
    }
  });

  test('edge cases follow RFC 9162: equal sizes need equal roots and no proof; size 0 is consistent with anything', () => {
    expect(verifyConsistencyProof(0, 0, [], EMPTY_ROOT, EMPTY_ROOT)).toBe(true);
    expect(verifyConsistencyProof(0, 5, [], EMPTY_ROOT, root(5))).toBe(true);
    expect(verifyConsistencyProof(5, 5, [], root(5), root(5))).toBe(true);
    expect(verifyConsistencyProof(5, 5, [], root(5), root(6))).toBe(false);
    expect(verifyConsistencyProof(5, 5, [EMPTY_ROOT], root(5), root(5))).toBe(false);
    expect(verifyConsistencyProof(6, 5, [], root(6), root(5))).toBe(false);
  });

  test('every pair of sizes up to 33 has a proof that verifies', () => {
    const data = packLeaves(Array.from({ length: 33 }, (_, i) => Buffer.from([i, 7])));
    for (let n = 1; n <= 33; n++) {
      for (let m = 1; m <= n; m++) {
        const proof = consistencyProof(data, m, n);
        expect(verifyConsistencyProof(m, n, proof, subtreeRoot(data, 0, m), subtreeRoot(data, 0, n)), `${m}→${n}`).toBe(
          true,
        );
      }
    }
  });
});
