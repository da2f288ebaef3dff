import { describe, expect, it } from 'vitest';
import { dryRunSentence, penaltySentence, retryWords, shortLease, waitWords } from '../../src/subject.js';

describe('waitWords', () => {
  it.each([
    [0, '0 ms'], [999, '999 ms'], [1000, '1 s'], [1001, '1.1 s'], [1500, '1.5 s'],
    [29000, '29 s'], [59_999, '60 s'], [60_000, '1 min'], [90_000, '1 min 30 s'],
    [90_001, '1 min 31 s'], [7_200_000, '2 h'], [3_661_000, '1 h 1 min 1 s'],
  ])('%d ms reads "%s" (never earlier than the wait)', (ms, words) => {
    expect(waitWords(ms)).toBe(words);
  });
});

describe('retryWords and dryRunSentence', () => {
  it('says allowed, when to retry, or never', () => {
    expect(retryWords({ allowed: true, retry_after_ms: null, never: false })).toBe('allowed now');
    expect(retryWords({ allowed: false, retry_after_ms: 29000, never: false })).toBe('retry in 29 s');
    expect(retryWords({ allowed: false, retry_after_ms: null, never: true }))
      .toBe('never (more than the limit grants)');
  });

  it('names the cost and the deciding limit (counted from 1)', () => {
    expect(dryRunSentence({ cost: 1, allowed: true, retry_after_ms: null, never: false, limit_index: 0 }))
      .toBe('A request of cost 1 would be allowed now.');
    expect(dryRunSentence({ cost: 2, allowed: false, retry_after_ms: 1500, never: false, limit_index: 1 }))
      .toBe('A request of cost 2 would be denied; it may retry in 1.5 s (limit 2 decides).');
    expect(dryRunSentence({ cost: 9, allowed: false, retry_after_ms: null, never: true, limit_index: 0 }))
      .toBe('A request of cost 9 can never be allowed: limit 1 grants less.');
  });
});

describe('shortLease', () => {
  it('keeps 8 characters of a full id and leaves a short one alone', () => {
    expect(shortLease('0123456789abcdef0123456789abcdef')).toBe('01234567…');
    expect(shortLease('01234567')).toBe('01234567');
    expect(shortLease('01234567', true)).toBe('01234567…');
  });
});

describe('penaltySentence', () => {
  it('says whether the key is blocked, for how long, and how far the escalation went', () => {
    expect(penaltySentence({ blocked: true, blocked_for_ms: 299_000, blocks: 1, strikes: 0, after: 5 }))
      .toBe('Blocked for 4 min 59 s: every request is denied, whatever the budget. 1 block so far: the next lasts longer.');
    expect(penaltySentence({ blocked: false, blocked_for_ms: null, blocks: 0, strikes: 2, after: 5 }))
      .toBe('Not blocked; 2 of 5 denials toward a block.');
    expect(penaltySentence({ blocked: false, blocked_for_ms: null, blocks: 3, strikes: 0, after: 5 }))
      .toBe('Not blocked; 0 of 5 denials toward a block. 3 blocks so far: the next lasts longer.');
  });
});
