import type { KubeObject } from '@baton/kube';
import { describe, expect, it } from 'vitest';
import { fieldPaths, isOwnedBy } from './takeover.js';

const fields = { 'f:data': { '.': {}, 'f:a': {}, 'f:b': {} } };
const withManagers = (...entries: object[]): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'x', managedFields: entries },
});

describe('isOwnedBy', () => {
  it('is true when the controller applies every field the push applied (shared ownership of equal values)', () => {
    const o = withManagers(
      { manager: 'baton-bootstrap', operation: 'Apply', fieldsV1: fields },
      { manager: 'baton-controller', operation: 'Apply', fieldsV1: fields },
    );
    expect(isOwnedBy(o, 'baton-controller', 'baton-bootstrap')).toBe(true);
  });

  it('is false while the push still owns a field the controller does not apply, or the controller never applied', () => {
    const partial = withManagers(
      { manager: 'baton-bootstrap', operation: 'Apply', fieldsV1: fields },
      { manager: 'baton-controller', operation: 'Apply', fieldsV1: { 'f:data': { 'f:a': {} } } },
    );
    expect(isOwnedBy(partial, 'baton-controller', 'baton-bootstrap')).toBe(false);
    expect(
      isOwnedBy(
        withManagers({ manager: 'baton-bootstrap', operation: 'Apply', fieldsV1: fields }),
        'baton-controller',
        'baton-bootstrap',
      ),
    ).toBe(false);
    // An Update (kubectl edit) is not the controller managing the object from Git.
    expect(
      isOwnedBy(
        withManagers({ manager: 'baton-controller', operation: 'Update', fieldsV1: fields }),
        'baton-controller',
        'baton-bootstrap',
      ),
    ).toBe(false);
  });

  it('ignores status subresource managers', () => {
    const o = withManagers(
      { manager: 'baton-controller', operation: 'Apply', fieldsV1: fields },
      { manager: 'baton-bootstrap', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': {} } },
    );
    expect(isOwnedBy(o, 'baton-controller', 'baton-bootstrap')).toBe(true);
  });
});

describe('fieldPaths', () => {
  it('lists leaves', () => {
    expect(fieldPaths(fields)).toEqual(['f:data/f:a', 'f:data/f:b']);
  });
});
