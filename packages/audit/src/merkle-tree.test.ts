import { describe, expect, test } from 'vitest';
import { EMPTY_ROOT, HASH_BYTES, hashLeaf, MerkleFrontier, subtreeRoot } from './merkle-tree.js';
import { packLeaves, RFC6962_LEAVES, RFC6962_ROOTS } from './testing/rfc6962-vectors.js';

describe('RFC 6962 Merkle tree', () => {
  test('the empty tree hashes to SHA-256 of nothing', () => {
    expect(EMPTY_ROOT.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(new MerkleFrontier().root().equals(EMPTY_ROOT)).toBe(true);
  });

  test('leaf hash is SHA-256(0x00 ‖ data)', () => {
    // RFC 6962 / transparency-dev rfc6962_test.go: HashLeaf("") and HashLeaf("L123456").
    expect(hashLeaf(Buffer.alloc(0)).toString('hex')).toBe(
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    );
    expect(hashLeaf(Buffer.from('L123456')).toString('hex')).toBe(
      '395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56',
    );
  });

  test.each(RFC6962_ROOTS.map((root, i) => [i + 1, root] as const))('root of the first %i test leaves', (n, root) => {
    const leaves = packLeaves(RFC6962_LEAVES.slice(0, n));
    expect(subtreeRoot(leaves, 0, n).toString('hex')).toBe(root);
    const f = new MerkleFrontier();
    for (let i = 0; i < n; i++) f.append(leaves.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    expect(f.root().toString('hex')).toBe(root);
  });

  test('the streaming frontier agrees with the recursive definition for every size up to 300', () => {
    const data = Array.from({ length: 300 }, (_, i) => Buffer.from(`entry ${i}`));
    const leaves = packLeaves(data);
    const f = new MerkleFrontier();
    for (let n = 1; n <= 300; n++) {
      f.append(leaves.subarray((n - 1) * HASH_BYTES, n * HASH_BYTES));
      expect(f.root().equals(subtreeRoot(leaves, 0, n)), `size ${n}`).toBe(true);
    }
  });

  test('a frontier survives a JSON round trip and rejects a malformed one', () => {
    const f = new MerkleFrontier();
    for (const d of RFC6962_LEAVES.slice(0, 7)) f.append(hashLeaf(d));
    const back = MerkleFrontier.fromJSON(JSON.parse(JSON.stringify(f)));
    expect(back.root().toString('hex')).toBe(RFC6962_ROOTS[6]);
    expect(back.size).toBe(7);
    expect(() => MerkleFrontier.fromJSON({ size: 7, nodes: ['00'] })).toThrow(/needs 3 nodes/);
    expect(() => MerkleFrontier.fromJSON({ size: 1, nodes: ['zz'] })).toThrow(/32-byte/);
  });
});
