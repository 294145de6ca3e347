import * as k8s from '@kubernetes/client-node';
import type { KubeObject } from './kube-object.js';

/**
 * A type name client-node's serializer does not know: it then passes the object through as parsed, keeping every
 * field (only `metadata` is read into its model, which knows all of ObjectMeta).
 */
const UNTYPED = 'UntypedKubernetesObject';

/** Options of {@link UntypedObjectApi.apply}. */
export interface UntypedApplyOptions {
  readonly fieldManager: string;
  readonly force?: boolean;
  /** Ask for a dry run: the API server validates, defaults and answers, and stores nothing. */
  readonly dryRun?: boolean;
}

/**
 * client-node's generic object API, with an apply and a read that do not go through the typed models. The models
 * keep only the fields they map, under their TypeScript names: a CustomResourceDefinition sent through them loses its
 * schema's `default`, `enum` and `x-kubernetes-*` keys (Flux's CRDs: 20 `default`s became 1), and an answer read
 * through them loses the same keys. What baton pushes, and what its confinement compares, must be the object as
 * written in the manifest and as the API server stored it.
 */
export class UntypedObjectApi extends k8s.KubernetesObjectApi {
  static override makeApiClient(kc: k8s.KubeConfig): UntypedObjectApi {
    const client = kc.makeApiClient(UntypedObjectApi);
    client.setDefaultNamespace(kc);
    return client;
  }

  /** Server-side apply of `object` as JSON (a subset of YAML, as the apply content type requires). */
  async apply(object: KubeObject, options: UntypedApplyOptions): Promise<KubeObject> {
    const path = await this.specUriPath(object, 'patch');
    const request = this.configuration.baseServer.makeRequestContext(path, k8s.HttpMethod.PATCH);
    request.setHeaderParam('Accept', 'application/json');
    request.setHeaderParam('Content-Type', k8s.PatchStrategy.ServerSideApply);
    request.setQueryParam('fieldManager', options.fieldManager);
    if (options.force) request.setQueryParam('force', 'true');
    if (options.dryRun) request.setQueryParam('dryRun', 'All');
    request.setBody(JSON.stringify(object));
    return (await this.requestPromise(request, UNTYPED)) as unknown as KubeObject;
  }

  /** Reads one object with every field the API server returned. */
  async readUntyped(ref: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>): Promise<KubeObject> {
    const path = await this.specUriPath(ref, 'read');
    const request = this.configuration.baseServer.makeRequestContext(path, k8s.HttpMethod.GET);
    request.setHeaderParam('Accept', 'application/json');
    return (await this.requestPromise(request, UNTYPED)) as unknown as KubeObject;
  }
}
