import { stringify } from 'yaml';
import { z } from 'zod';
import { GitSyncSpecSchema, gitSyncCrd } from './gitsync.js';

/** The CRD as committed in `bootstrap-manifests/baton-controller/30-crd.yaml`. */
export function crdYaml(): string {
  return `# Generated from GitSyncSpecSchema by packages/controller/scripts/write-crd.ts; do not edit.\n${stringify(gitSyncCrd(), { version: '1.1', lineWidth: 0 })}`;
}

/** The editor JSON Schema of a GitSync spec, as committed in `packages/controller/schemas/`. */
export function specJsonSchema(): string {
  return `${JSON.stringify(z.toJSONSchema(GitSyncSpecSchema, { io: 'input' }), null, 2)}\n`;
}
