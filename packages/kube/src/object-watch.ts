import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObject } from './kube-object.js';
import type { KubeRestClient } from './rest-client.js';
import { statusOfError, type WatchEvent } from './rest-http.js';

/** An object to follow: its kind and name (the rest of it is ignored). */
export type WatchedRef = Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;

/** Options of {@link ObjectWatch.open}. */
export interface ObjectWatchOptions {
  /** Ends every watch. */
  readonly signal?: AbortSignal;
  /** Told when a watch fails and is opened again (the error's message; never a credential). */
  readonly onRetry?: (ref: WatchedRef, message: string) => void;
  /** How long the apiserver keeps one watch open before the watch lists and opens it again, in seconds. @default 270 */
  readonly timeoutSeconds?: number;
}

const refKey = (r: WatchedRef) => `${r.apiVersion}/${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`;

/**
 * A fixed set of objects, each followed by a list and a watch narrowed to its name (`fieldSelector=metadata.name=`),
 * so that a wait reads them from memory instead of reading each one from the apiserver again and again:
 * the takeover used to send about 31 requests a second while it waited. A kind that is not served yet (its CRD is
 * being created) counts as absent and is tried again; a failed watch is listed and opened again with backoff.
 */
export class ObjectWatch {
  private readonly cache = new Map<string, KubeObject | undefined>();
  private readonly listed = new Set<string>();
  private readonly stop = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private initialEvents = true;
  /** Requests sent so far (lists and watches): the cost of the wait. */
  requests = 0;
  /** How many objects it follows. */
  size = 0;

  private constructor(
    private readonly rest: KubeRestClient,
    private readonly options: ObjectWatchOptions,
  ) {}

  /** Lists and watches each of `refs` (duplicates once); resolves when each has been listed once or has failed once. */
  static async open(rest: KubeRestClient, refs: readonly WatchedRef[], options: ObjectWatchOptions = {}) {
    const w = new ObjectWatch(rest, options);
    const unique = new Map(refs.map((r) => [refKey(r), r]));
    w.size = unique.size;
    const firsts = [...unique.values()].map((r) => {
      let first!: () => void;
      const firstDone = new Promise<void>((resolve) => {
        first = resolve;
      });
      w.loops.push(w.follow(r, first));
      return firstDone;
    });
    await Promise.all(firsts);
    return w;
  }

  /** The object as last seen (undefined: absent); `fallback` reads it when this watch has no list of it yet. */
  async read(ref: WatchedRef, fallback: (ref: WatchedRef) => Promise<KubeObject | undefined>) {
    const key = refKey(ref);
    return this.listed.has(key) ? this.cache.get(key) : fallback(ref);
  }

  /** Ends every watch and waits for their loops. */
  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all(this.loops);
  }

  private set(key: string, o: KubeObject | undefined): void {
    this.cache.set(key, o);
    this.listed.add(key);
  }

  private get signal(): AbortSignal {
    return this.options.signal ? AbortSignal.any([this.options.signal, this.stop.signal]) : this.stop.signal;
  }

  /** List, then watch from the list's version; again on the stream's end, again after a failure with backoff. */
  private async follow(ref: WatchedRef, firstDone: () => void): Promise<void> {
    const signal = this.signal;
    let backoffMs = 500;
    while (!signal.aborted) {
      try {
        const openedAt = performance.now();
        const gone = await this.listAndWatch(ref, signal, firstDone);
        // The stream ended at its timeout: again at once. A 410, or a stream the apiserver ended within a second of
        // opening it, backs off: a watch that ends at once must never become a loop of requests.
        const early = gone || performance.now() - openedAt < 1_000;
        backoffMs = early ? Math.min(backoffMs * 2, 8_000) : 500;
        if (early) await sleep(backoffMs, undefined, { signal }).catch(() => {});
      } catch (err) {
        firstDone();
        if (signal.aborted) return;
        const notServed = statusOfError(err) === 404;
        if (!notServed) this.options.onRetry?.(ref, (err as Error).message);
        // A kind about to be served is asked for every 2 s; a failing apiserver backs off to 8 s.
        await sleep(notServed ? 2_000 : backoffMs, undefined, { signal }).catch(() => {});
        if (!notServed) backoffMs = Math.min(backoffMs * 2, 8_000);
      }
    }
  }

  /**
   * One watch of `ref` that starts with its current state (`sendInitialEvents`: the object as an ADDED event, then a
   * bookmark marking the end of the initial events, so an absent object is known absent): one request where a list
   * and a watch take two. An apiserver that refuses it (400/422) gets a list and a watch from then on.
   * @returns true when the watch ended on a 410 (a version compacted away).
   */
  private async listAndWatch(ref: WatchedRef, signal: AbortSignal, firstDone: () => void): Promise<boolean> {
    const key = refKey(ref);
    let path: string;
    try {
      path = await this.rest.collectionPath(ref.apiVersion, ref.kind, ref.metadata.namespace);
    } catch (err) {
      if (statusOfError(err) === 404) {
        // Not served yet: absent for now, and discovery is asked again after the pause.
        this.set(key, undefined);
        this.rest.forgetDiscovery(ref.apiVersion);
      }
      throw err;
    }
    const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${ref.metadata.name}`)}`;
    const watchQuery = `${selector}&watch=1&allowWatchBookmarks=true&timeoutSeconds=${this.options.timeoutSeconds ?? 270}`;
    let from: string | undefined;
    if (!this.initialEvents) {
      this.requests++;
      const list = await this.rest.call<{ metadata?: { resourceVersion?: string }; items?: KubeObject[] }>(
        'GET',
        `${path}?${selector}`,
        undefined,
        undefined,
        signal,
      );
      const item = list.items?.[0];
      this.set(key, item ? { ...item, apiVersion: ref.apiVersion, kind: ref.kind } : undefined);
      firstDone();
      from = list.metadata?.resourceVersion ?? '';
    }
    let gone = false;
    let seen: KubeObject | undefined;
    let initial = from === undefined;
    const query =
      from === undefined
        ? `${watchQuery}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`
        : `${watchQuery}&resourceVersion=${from}`;
    this.requests++;
    try {
      await this.rest.watch(
        `${path}?${query}`,
        (e: WatchEvent) => {
          if (e.type === 'ERROR') gone = true;
          else if (e.type === 'BOOKMARK') {
            if (initial && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true') {
              initial = false;
              this.set(key, seen);
              firstDone();
            }
          } else {
            const o = e.type === 'DELETED' ? undefined : (e.object as KubeObject);
            if (initial) seen = o;
            else this.set(key, o);
          }
        },
        signal,
      );
    } catch (err) {
      const status = statusOfError(err);
      if (from === undefined && (status === 400 || status === 422)) this.initialEvents = false;
      throw err;
    }
    return gone;
  }
}
