import { describe, expect, it } from 'vitest';
import { chartPaths, formatRate, ratesBetween, totals } from '../../src/rates.js';
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

describe('chartPaths', () => {
  const at = (s) => 1_700_000_000_000_000 + s * 1e6;
  it('puts the newest point at the right edge and scales counts to the largest', () => {
    const points = [
      { at: at(0), allowed: 2, denied: 0, shadow_denied: 0, degraded: 0 },
      { at: at(10), allowed: 4, denied: 1, shadow_denied: 0, degraded: 0 },
    ];
    const paths = chartPaths(points, 100, 40, 10e6);
    expect(paths.max).toBe(4);
    expect(paths.allowed).toBe('M0,20L100,0');
    expect(paths.denied).toBe('M0,40L100,30');
  });

  it('leaves out points older than the span and draws nothing without points', () => {
    const points = [{ at: at(0), allowed: 100 }, { at: at(20), allowed: 1 }, { at: at(30), allowed: 1 }];
    expect(chartPaths(points, 100, 10, 10e6).max).toBe(1);
    expect(chartPaths([], 100, 10).allowed).toBe('');
  });

  it('sums every series', () => {
    expect(totals([{ allowed: 1, denied: 2 }, { allowed: 3, degraded: 1 }]))
      .toEqual({ allowed: 4, denied: 2, shadow_denied: 0, degraded: 1 });
  });
});
