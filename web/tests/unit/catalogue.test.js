import { describe, expect, it } from 'vitest';
import {
  algorithmNames, fieldsOf, newLimit, parameterOf, setCatalogue, catalogue,
} from '../../src/catalogue.js';
// The server's GET /v1/algorithms (admin_api_test.cc checks that this copy is its answer).
import served from './algorithms.json';

const algorithms = served.algorithms;

describe('the catalogue', () => {
  it('lists the algorithms in the order documents do', () => {
    expect(algorithmNames(algorithms)).toEqual(['token_bucket', 'gcra', 'leaky_bucket',
      'fixed_window', 'sliding_window', 'sliding_log', 'concurrency']);
  });

  it('gives each algorithm its fields in document order', () => {
    expect(fieldsOf('token_bucket', algorithms))
      .toEqual(['capacity', 'refill', 'period', 'refill_mode', 'initial']);
    expect(fieldsOf('concurrency', algorithms)).toEqual(['limit', 'lease_ttl']);
    expect(fieldsOf('magic', algorithms)).toEqual([]);
  });

  it('makes new limits from the examples', () => {
    expect(newLimit('token_bucket', algorithms))
      .toEqual({ algorithm: 'token_bucket', capacity: 10, refill: 5, period: '1s' });
    expect(newLimit('leaky_bucket', algorithms))
      .toEqual({ algorithm: 'leaky_bucket', rate: 10, period: '1s', max_delay: '500ms' });
    expect(newLimit('fixed_window', algorithms))
      .toEqual({ algorithm: 'fixed_window', limit: 100, window: '1m' });
  });

  it('says which fields hold durations and choices', () => {
    expect(parameterOf('gcra', 'period', algorithms).type).toBe('duration');
    expect(parameterOf('gcra', 'burst', algorithms).type).toBe('count');
    expect(parameterOf('token_bucket', 'refill_mode', algorithms))
      .toMatchObject({ type: 'choice', choices: ['smooth', 'interval'], default: 'smooth' });
  });

  it('uses the loaded catalogue by default', () => {
    setCatalogue(algorithms);
    expect(catalogue()).toBe(algorithms);
    expect(fieldsOf('gcra')).toEqual(['rate', 'period', 'burst']);
    setCatalogue(undefined);
    expect(fieldsOf('gcra')).toEqual([]);
  });
});
