import { timingSafeEqual } from 'node:crypto';
import { HASH_BYTES, hashChildren, splitPoint, subtreeRoot } from './merkle-tree.js';

// Tree sizes can exceed 2^31, so bit operations (which truncate to int32) are spelled as arithmetic.
const isOdd = (n: number): boolean => n % 2 === 1;
const half = (n: number): number => Math.floor(n / 2);

/**
 * RFC 9162 §2.1.3.1 inclusion proof (audit path) for leaf `index` in the tree of the first `size` leaf hashes.
 * O(size) hashes: callers hold the leaf hashes in memory, packed 32 bytes each.
 * @throws {RangeError} when `index` is not below `size` or `size` exceeds the leaves given.
 */
export function inclusionProof(leaves: Uint8Array, index: number, size: number): Buffer[] {
  const known = leaves.length / HASH_BYTES;
  if (!(index >= 0 && index < size && size <= known)) {
    throw new RangeError(`no leaf ${index} in a tree of size ${size} (${known} leaves known)`);
  }
  const path: Buffer[] = [];
  let start = 0;
  let end = size;
  let m = index;
  // Walk from the root down, collecting siblings, then reverse so the proof runs leaf-to-root.
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (m < k) {
      path.push(subtreeRoot(leaves, start + k, end));
      end = start + k;
    } else {
      path.push(subtreeRoot(leaves, start, start + k));
      start += k;
      m -= k;
    }
  }
  return path.reverse();
}

/**
 * RFC 9162 §2.1.4.1 consistency proof between the trees of the first `oldSize` and `newSize` leaves.
 * Empty when `oldSize` is 0 or equals `newSize`.
 * @throws {RangeError} when `oldSize > newSize` or `newSize` exceeds the leaves given.
 */
export function consistencyProof(leaves: Uint8Array, oldSize: number, newSize: number): Buffer[] {
  const known = leaves.length / HASH_BYTES;
  if (!(oldSize >= 0 && oldSize <= newSize && newSize <= known)) {
    throw new RangeError(`no consistency proof from size ${oldSize} to ${newSize} (${known} leaves known)`);
  }
  if (oldSize === 0 || oldSize === newSize) return [];
  const proof: Buffer[] = [];
  let start = 0;
  let end = newSize;
  let m = oldSize;
  let complete = true;
  while (m !== end - start) {
    const k = splitPoint(end - start);
    if (m <= k) {
      proof.push(subtreeRoot(leaves, start + k, end));
      end = start + k;
    } else {
      proof.push(subtreeRoot(leaves, start, start + k));
      start += k;
      m -= k;
      complete = false;
    }
  }
  // The old tree's last subtree is only needed when it is not the old root itself.
  if (!complete) proof.push(subtreeRoot(leaves, start, end));
  return proof.reverse();
}

/**
 * RFC 9162 §2.1.3.2: recomputes the root from a leaf hash and its inclusion proof. Returns undefined when the
 * proof has the wrong shape for (index, size) — never throws on hostile input.
 */
export function rootFromInclusionProof(
  index: number,
  size: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
): Buffer | undefined {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) return undefined;
  if (leafHash.length !== HASH_BYTES || proof.some((p) => p.length !== HASH_BYTES)) return undefined;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leafHash);
  for (const p of proof) {
    if (sn === 0) return undefined;
    if (isOdd(fn) || fn === sn) {
      r = hashChildren(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = hashChildren(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : undefined;
}

/** RFC 9162 §2.1.3.2: true when `proof` shows leaf `index` with `leafHash` is in the tree of `size` with `root`. */
export function verifyInclusionProof(
  index: number,
  size: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  const got = rootFromInclusionProof(index, size, leafHash, proof);
  return got !== undefined && sameHash(got, root);
}

/**
 * RFC 9162 §2.1.4.2: true when `proof` shows the tree (oldSize, oldRoot) is a prefix of (newSize, newRoot).
 * Never throws on hostile input.
 */
export function verifyConsistencyProof(
  oldSize: number,
  newSize: number,
  proof: readonly Uint8Array[],
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
): boolean {
  if (!(Number.isSafeInteger(oldSize) && Number.isSafeInteger(newSize) && oldSize >= 0 && oldSize <= newSize)) {
    return false;
  }
  if (proof.some((p) => p.length !== HASH_BYTES)) return false;
  if (oldSize === newSize) return proof.length === 0 && sameHash(oldRoot, newRoot);
  if (oldSize === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = [...proof];
  // A power-of-two old tree is itself a node of the new tree, so the proof omits it.
  if (isPowerOfTwo(oldSize)) path.unshift(oldRoot);
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = hashChildren(c, fr);
      sr = hashChildren(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = hashChildren(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && sameHash(fr, oldRoot) && sameHash(sr, newRoot);
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === HASH_BYTES && b.length === HASH_BYTES && timingSafeEqual(a, b);
}
