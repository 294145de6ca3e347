// Regenerates the GitSync CRD and the editor JSON Schema from the zod schema:
//   node --conditions=@baton/source --import tsx packages/controller/scripts/write-crd.ts
// `src/gitsync.test.ts` fails when the committed files drift from the schema.
import { writeFileSync } from 'node:fs';
import { crdYaml, specJsonSchema } from '../src/gitsync-files.js';

const root = new URL('../../../', import.meta.url);
writeFileSync(new URL('bootstrap-manifests/baton-controller/30-crd.yaml', root), crdYaml());
writeFileSync(new URL('packages/controller/schemas/gitsync-spec.schema.json', root), specJsonSchema());
