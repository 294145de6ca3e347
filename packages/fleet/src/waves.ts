import { ConfigError } from '@baton/errors';
import type { FleetFile } from './fleet-file.js';

/** One wave of a rollout: its clusters, in fleet-file order. */
export interface Wave<T = string> {
  /** 0-based position; wave 0 is the canary. */
  readonly index: number;
  readonly name: string;
  readonly clusters: readonly T[];
}

/** A `--shard i/n` slice. */
export interface Shard {
  /** 0-based. */
  readonly index: number;
  readonly count: number;
}

/**
 * Assigns every cluster to exactly one wave. Waves take, in order, from the clusters not yet in a wave: a selector
 * takes every one whose labels match, a count the next N, a percent the next ceil(P% of the fleet), neither the rest.
 * @throws {ConfigError} naming the file and the wave when a selector matches nothing, or clusters are left over.
 */
export function assignWaves(file: string, fleet: Pick<FleetFile, 'clusters' | 'waves'>): Wave<string>[] {
  let left = fleet.clusters.map((c) => c);
  const total = fleet.clusters.length;
  const waves: Wave<string>[] = [];
  fleet.waves.forEach((w, i) => {
    const name = w.name ?? (i === 0 ? 'canary' : `wave-${i + 1}`);
    let take: typeof left;
    if (w.selector) {
      const sel = Object.entries(w.selector);
      take = left.filter((c) => sel.every(([k, v]) => c.labels[k] === v));
      if (take.length === 0)
        throw new ConfigError(
          `${file}: waves[${i}] (${name}): selector ${JSON.stringify(w.selector)} matches no cluster not already in an earlier wave; fix the selector or the cluster labels`,
        );
    } else if (w.count !== undefined) take = left.slice(0, w.count);
    else if (w.percent !== undefined) take = left.slice(0, Math.ceil((w.percent / 100) * total));
    else take = left;
    const taken = new Set(take.map((c) => c.name));
    left = left.filter((c) => !taken.has(c.name));
    waves.push({ index: i, name, clusters: take.map((c) => c.name) });
  });
  if (left.length > 0) {
    const names = left.slice(0, 5).map((c) => c.name);
    throw new ConfigError(
      `${file}: waves: ${left.length} cluster(s) are in no wave (${names.join(', ')}${left.length > 5 ? ', …' : ''}); add a last wave {} that takes every cluster left`,
    );
  }
  const emptyAt = waves.findIndex((w) => w.clusters.length === 0);
  if (emptyAt >= 0)
    throw new ConfigError(
      `${file}: waves[${emptyAt}] (${waves[emptyAt]!.name}) has no cluster left to take; remove it or make an earlier wave smaller`,
    );
  return waves;
}

/**
 * Parses `--shard i/n` (0-based i).
 * @throws {ConfigError} naming the flag.
 */
export function parseShard(value: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(value.trim());
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index >= count)
    throw new ConfigError(
      `--shard ${value} is invalid: use i/n with 0 <= i < n, e.g. --shard 0/3 (GitLab's CI_NODE_INDEX is 1-based: use $((CI_NODE_INDEX-1))/$CI_NODE_TOTAL)`,
    );
  return { index, count };
}

/**
 * The clusters of shard i of n: the fleet in wave order, every n-th from position i. Deterministic for a given
 * fleet file, so n CI jobs each hand off a disjoint slice and together every cluster exactly once; each wave is
 * spread evenly over the shards. Waves a shard has no cluster of are left out.
 */
export function shardWaves<T>(waves: readonly Wave<T>[], shard: Shard | undefined): Wave<T>[] {
  if (!shard || shard.count === 1) return [...waves];
  let position = 0;
  const out: Wave<T>[] = [];
  for (const w of waves) {
    const mine = w.clusters.filter(() => position++ % shard.count === shard.index);
    if (mine.length > 0) out.push({ index: w.index, name: w.name, clusters: mine });
  }
  return out;
}

/**
 * The failure budget as a count: a number as is, a percentage of the clusters this run hands off (rounded down).
 */
export function budgetCount(budget: number | string, clusters: number): number {
  if (typeof budget === 'number') return budget;
  return Math.floor((Number(budget.slice(0, -1)) / 100) * clusters);
}
