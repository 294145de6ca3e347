// @baton/kube/rest: baton's one light REST client. This entry loads node:https, yaml and @baton/errors only, never
// client-node, so the controller (which uses nothing else of @baton/kube) stays ~70 MB smaller (ADR 0006).
export type {
  KubeResponse,
  KubeTarget,
  ResourceInfo,
  RestApplyOptions,
  RestObject,
  WatchEvent,
} from './rest-client.js';
export { KubeRestClient, statusOfError } from './rest-client.js';
