import { beforeAll, describe, expect, it } from 'vitest';
import { setCatalogue } from '../../src/catalogue.js';
import { diffLines, documentYaml, editable, toYaml } from '../../src/diff.js';
// The server's GET /v1/algorithms (admin_api_test.cc checks that this copy is its answer).
import served from './algorithms.json';

beforeAll(() => setCatalogue(served.algorithms));

const policy = {
  name: 'orders.create', description: 'checkout writes', apps: ['checkout', 'mobile'],
  mode: 'enforce', on_store_failure: 'fail_open', enabled: true,
  limits: [{ algorithm: 'token_bucket', capacity: 100, refill: 50, period: '1s' }],
  version: 3, created_by: 'admin', updated_by: 'alice', created_at: 1, updated_at: 2,
};

describe('documentYaml', () => {
  it('writes the editable document as YAML, without audit fields', () => {
    expect(documentYaml(policy)).toBe(
      'name: orders.create\n' +
      'description: checkout writes\n' +
      'apps: [checkout, mobile]\n' +
      'mode: enforce\n' +
      'on_store_failure: fail_open\n' +
      'enabled: true\n' +
      'limits:\n' +
      '  - algorithm: token_bucket\n' +
      '    capacity: 100\n' +
      '    refill: 50\n' +
      '    period: 1s\n');
  });

  it('quotes strings YAML would read as something else, and markup stays plain text', () => {
    expect(toYaml({ a: 'true', b: '12', c: '*', d: 'x: y', e: '<img src=x onerror=alert(1)>' }))
      .toBe('\na: "true"\nb: "12"\nc: \"*\"\nd: "x: y"\ne: "<img src=x onerror=alert(1)>"');
  });

  it('orders the keys as documents are written, whatever order the server sent', () => {
    const sorted = { apps: ['a'], limits: [{ window: '1s', limit: 3, algorithm: 'fixed_window' }],
      mode: 'shadow', name: 'p', version: 2 };
    expect(documentYaml(sorted)).toBe('name: p\napps: [a]\nmode: shadow\nlimits:\n' +
      '  - algorithm: fixed_window\n    limit: 3\n    window: 1s\n');
  });

  it('drops only the audit fields', () => {
    expect(Object.keys(editable(policy))).toEqual(
      ['name', 'description', 'apps', 'mode', 'on_store_failure', 'enabled', 'limits']);
  });
});

describe('diffLines', () => {
  it('marks removed and added lines and keeps common ones', () => {
    expect(diffLines('a\nb\nc', 'a\nx\nc')).toEqual([
      { op: ' ', text: 'a' }, { op: '-', text: 'b' }, { op: '+', text: 'x' }, { op: ' ', text: 'c' },
    ]);
  });

  it('reports nothing changed for equal texts', () => {
    expect(diffLines('a\nb', 'a\nb').every((l) => l.op === ' ')).toBe(true);
  });

  it('handles additions at the end and removals at the start', () => {
    expect(diffLines('a\nb', 'b\nc')).toEqual([
      { op: '-', text: 'a' }, { op: ' ', text: 'b' }, { op: '+', text: 'c' },
    ]);
  });

  it('diffs two policy versions to the one changed parameter', () => {
    const next = { ...policy, limits: [{ ...policy.limits[0], capacity: 20 }] };
    const changed = diffLines(documentYaml(policy), documentYaml(next)).filter((l) => l.op !== ' ');
    expect(changed).toEqual([
      { op: '-', text: '    capacity: 100' }, { op: '+', text: '    capacity: 20' },
    ]);
  });
});
