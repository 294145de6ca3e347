import { hash } from 'node:crypto';

/** Length in bytes of every hash in the tree (SHA-256). */
export const HASH_BYTES = 32;

const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

/** SHA-256 of the empty string: the RFC 6962 root of a tree with no leaves. */
export const EMPTY_ROOT: Buffer = hash('sha256', Buffer.alloc(0), 'buffer');

/** RFC 6962 §2.1 leaf hash: `SHA-256(0x00 ‖ data)`. */
export function hashLeaf(data: Uint8Array): Buffer {
  // One allocation and one native call: crypto.hash over a concatenation beats createHash().update().update() ~2x.
  const buf = Buffer.allocUnsafe(data.length + 1);
  buf[0] = LEAF_PREFIX;
  buf.set(data, 1);
  return hash('sha256', buf, 'buffer');
}

/** RFC 6962 §2.1 interior node hash: `SHA-256(0x01 ‖ left ‖ right)`. */
export function hashChildren(left: Uint8Array, right: Uint8Array): Buffer {
  const buf = Buffer.allocUnsafe(1 + HASH_BYTES * 2);
  buf[0] = NODE_PREFIX;
  buf.set(left, 1);
  buf.set(right, 1 + HASH_BYTES);
  return hash('sha256', buf, 'buffer');
}

/** Largest power of two strictly less than `n` (n ≥ 2): where RFC 6962 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The i-th 32-byte hash of a packed array of hashes. */
export function hashAt(packed: Uint8Array, i: number): Buffer {
  return Buffer.from(packed.buffer, packed.byteOffset + i * HASH_BYTES, HASH_BYTES);
}

/**
 * RFC 6962 Merkle Tree Hash of leaves `[start, end)` of `leaves`, leaf hashes packed 32 bytes each (one buffer,
 * not an array of buffers: a million leaves is 32 MB instead of ~130 MB of objects). O(end - start) hashes,
 * recursion depth log₂(end - start). Used for proofs, where the leaf hashes are in memory.
 */
export function subtreeRoot(leaves: Uint8Array, start: number, end: number): Buffer {
  const n = end - start;
  if (n === 0) return EMPTY_ROOT;
  if (n === 1) return Buffer.from(hashAt(leaves, start));
  const k = splitPoint(n);
  return hashChildren(subtreeRoot(leaves, start, start + k), subtreeRoot(leaves, start + k, end));
}

/**
 * The right edge of a Merkle tree grown from leaf 0: one perfect-subtree root per set bit of the size
 * (a "compact range" [0, size)). Appending is amortised one node hash per leaf, the root costs log₂(size)
 * hashes, and memory is log₂(size) hashes: this is what lets a writer and a verifier stream a log of any length.
 */
export class MerkleFrontier {
  #size = 0;
  // nodes[i] is the root of a perfect subtree; heights strictly decrease from left to right.
  readonly #nodes: Buffer[] = [];

  /** Number of leaves appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Appends one leaf hash (32 bytes). */
  append(leafHash: Uint8Array): void {
    let node: Buffer = Buffer.from(leafHash);
    // Each trailing 1-bit of the old size is a perfect subtree of the same height as the carry: merge them.
    for (let s = this.#size; s & 1; s = Math.floor(s / 2)) {
      node = hashChildren(this.#nodes.pop()!, node);
    }
    this.#nodes.push(node);
    this.#size += 1;
  }

  /** RFC 6962 root hash of the leaves appended so far (EMPTY_ROOT for none). */
  root(): Buffer {
    if (this.#nodes.length === 0) return EMPTY_ROOT;
    let acc: Buffer = this.#nodes[this.#nodes.length - 1]!;
    for (let i = this.#nodes.length - 2; i >= 0; i--) acc = hashChildren(this.#nodes[i]!, acc);
    return acc;
  }

  /** The frontier nodes as hex, left to right, for caching next to the log. */
  toJSON(): { size: number; nodes: string[] } {
    return { size: this.#size, nodes: this.#nodes.map((n) => n.toString('hex')) };
  }

  /**
   * Rebuilds a frontier from {@link MerkleFrontier.toJSON} output.
   * @throws {RangeError} when the node count does not match the size's set bits or a node is not 32 bytes.
   */
  static fromJSON(state: { size: number; nodes: readonly string[] }): MerkleFrontier {
    const f = new MerkleFrontier();
    if (!Number.isSafeInteger(state.size) || state.size < 0) throw new RangeError('frontier size is not a count');
    if (popcount(state.size) !== state.nodes.length) {
      throw new RangeError(
        `frontier of size ${state.size} needs ${popcount(state.size)} nodes, got ${state.nodes.length}`,
      );
    }
    for (const hex of state.nodes) {
      const node = Buffer.from(hex, 'hex');
      if (node.length !== HASH_BYTES || node.toString('hex') !== hex.toLowerCase()) {
        throw new RangeError('frontier node is not a 32-byte hex hash');
      }
      f.#nodes.push(node);
    }
    f.#size = state.size;
    return f;
  }

  /** An independent copy. */
  clone(): MerkleFrontier {
    const f = new MerkleFrontier();
    f.#size = this.#size;
    f.#nodes.push(...this.#nodes);
    return f;
  }
}

function popcount(n: number): number {
  let c = 0;
  for (let s = n; s > 0; s = Math.floor(s / 2)) c += s & 1;
  return c;
}
