import { beforeAll, describe, expect, it } from 'vitest';
import { setCatalogue } from '../../src/catalogue.js';
import { durationWords, limitWords, policyWords } from '../../src/words.js';
// The server's GET /v1/algorithms (admin_api_test.cc checks that this copy is its answer).
import served from './algorithms.json';

beforeAll(() => setCatalogue(served.algorithms));

describe('limitWords', () => {
  it.each([
    [{ algorithm: 'token_bucket', capacity: 5, refill: 2, period: '1s' }, '5 at once, 2 per second'],
    [{ algorithm: 'token_bucket', capacity: 10, refill: 10, period: '1m', refill_mode: 'interval' },
      '10 at once, 10 added every minute'],
    [{ algorithm: 'token_bucket', capacity: 10, refill: 1, period: '1s', initial: 0 },
      '10 at once, 1 per second, new keys start with 0'],
    [{ algorithm: 'token_bucket', capacity: 10, refill: 1, period: '1s', initial: 10 },
      '10 at once, 1 per second'],
    [{ algorithm: 'gcra', rate: 10, period: '1s', burst: 5 }, '10 per second, up to 6 at once'],
    [{ algorithm: 'gcra', rate: 3, period: '2s', burst: 0 }, '3 per 2s, up to 1 at once'],
    [{ algorithm: 'leaky_bucket', rate: 10, period: '1s', max_delay: '500ms' },
      '10 per second paced evenly, waiting up to 500ms'],
    [{ algorithm: 'leaky_bucket', rate: 10, period: '1s', max_delay: '0s' },
      '10 per second paced evenly, no waiting'],
    [{ algorithm: 'fixed_window', limit: 100, window: '1h' }, '100 per hour'],
    [{ algorithm: 'sliding_window', limit: 100, window: '5m' }, '100 in any 5m (estimated)'],
    [{ algorithm: 'sliding_log', limit: 7, window: '1d' }, '7 in any day (exact)'],
    [{ algorithm: 'concurrency', limit: 3, lease_ttl: '30s' }, '3 in flight, lease 30s'],
  ])('%o reads "%s"', (limit, words) => {
    expect(limitWords(limit)).toBe(words);
  });

  it('names an unknown algorithm rather than guessing', () => {
    expect(limitWords({ algorithm: 'magic' })).toBe('magic');
    expect(limitWords({ algorithm: 'token_bucket', capacity: 1 }, [])).toBe('token_bucket');
  });

  it('shows a missing parameter as "?"', () => {
    expect(limitWords({ algorithm: 'fixed_window', window: '1s' })).toBe('? per second');
  });
});

describe('durationWords', () => {
  it('spells one unit as its name and keeps anything else as written', () => {
    expect(durationWords('1s')).toBe('second');
    expect(durationWords('1h')).toBe('hour');
    expect(durationWords('1ms')).toBe('1ms');
    expect(durationWords('90s')).toBe('90s');
    expect(durationWords('soon')).toBe('soon');
  });
});

describe('policyWords', () => {
  it('joins every limit with "; "', () => {
    expect(policyWords({ limits: [
      { algorithm: 'token_bucket', capacity: 5, refill: 2, period: '1s' },
      { algorithm: 'fixed_window', limit: 100, window: '1h' },
    ] })).toBe('5 at once, 2 per second; 100 per hour');
  });
});
