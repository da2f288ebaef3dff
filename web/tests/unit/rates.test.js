import { describe, expect, it } from 'vitest';
import { formatRate, ratesBetween } from '../../src/rates.js';
import { canEdit } from '../../src/perm.js';

describe('ratesBetween', () => {
  it('divides the counter increase by the seconds between samples', () => {
    const prev = { at: 1_700_000_000_000_000, policies: { p: { allowed: 10, denied: 0, shadow_denied: 0, degraded: 0 } } };
    const next = { at: 1_700_000_002_000_000, policies: { p: { allowed: 16, denied: 4, shadow_denied: 0, degraded: 1 } } };
    expect(ratesBetween(prev, next)).toEqual({ p: { allowed: 3, denied: 2, shadow_denied: 0, degraded: 0.5 } });
  });

  it('counts a policy new since the last sample from zero, and never goes negative', () => {
    const prev = { at: 0, policies: { p: { allowed: 9 } } };
    const next = { at: 1_000_000, policies: { p: { allowed: 2 }, q: { allowed: 5 } } };
    expect(ratesBetween(prev, next).p.allowed).toBe(0);
    expect(ratesBetween(prev, next).q.allowed).toBe(5);
  });

  it('gives nothing without two samples in order', () => {
    expect(ratesBetween(null, { at: 1, policies: {} })).toEqual({});
    expect(ratesBetween({ at: 5, policies: {} }, { at: 5, policies: { p: {} } })).toEqual({});
  });
});

describe('formatRate', () => {
  it.each([[0, '0/s'], [0.4, '0.4/s'], [2, '2/s'], [12.6, '13/s'], [1500, '1.5k/s']])(
    '%d reads %s', (rate, text) => expect(formatRate(rate)).toBe(text));
});

describe('canEdit', () => {
  const owner = { name: 'o', admin: false, roles: { a: 'owner', b: 'viewer' } };
  it('follows the server: owner of every listed app; * only for admins', () => {
    expect(canEdit(owner, ['a'])).toBe(true);
    expect(canEdit(owner, ['a', 'b'])).toBe(false);
    expect(canEdit(owner, ['*'])).toBe(false);
    expect(canEdit({ admin: true }, ['*'])).toBe(true);
  });
});
