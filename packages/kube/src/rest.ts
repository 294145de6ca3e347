// @baton/kube/rest: baton's one light REST client. This entry loads node:https, yaml and @baton/errors only, never
// client-node, so the controller (which uses nothing else of @baton/kube) stays ~70 MB smaller (ADR 0006).
export type {
  KubeTarget,
  ResourceInfo,
  RestApplyOptions,
} from './rest-client.js';
export { KubeRestClient } from './rest-client.js';
export type { KubeResponse, RestObject, WatchEvent } from './rest-http.js';
export { statusOfError } from './rest-http.js';
