// Limits in words for the policy list: "5 at once, 2 per second". Pure functions (unit-tested in
// tests/unit/words.test.js); the same facts as the CLI's describe_limit, phrased for people.

const UNIT_NAMES = { s: 'second', m: 'minute', h: 'hour', d: 'day' };

// "1s" -> "second", "1h" -> "hour", "5m" -> "5m", "500ms" -> "500ms"; for "per …" and "in any …".
export function durationWords(duration) {
  const match = /^(\d+)(us|ms|s|m|h|d)$/.exec(String(duration ?? ''));
  if (!match) return String(duration ?? '?');
  const [, amount, unit] = match;
  if (amount === '1' && UNIT_NAMES[unit]) return UNIT_NAMES[unit];
  return amount + unit;
}

const n = (value) => (value === undefined || value === null ? '?' : String(value));

export function limitWords(limit) {
  const per = (d) => ' per ' + durationWords(d);
  switch (limit?.algorithm) {
    case 'token_bucket': {
      let text = `${n(limit.capacity)} at once, `;
      text +=
        limit.refill_mode === 'interval'
          ? `${n(limit.refill)} added every ${durationWords(limit.period)}`
          : n(limit.refill) + per(limit.period);
      if (limit.initial !== undefined && limit.initial < limit.capacity) {
        text += `, new keys start with ${limit.initial}`;
      }
      return text;
    }
    case 'gcra':
      return `${n(limit.rate)}${per(limit.period)}, up to ${Number(limit.burst ?? 0) + 1} at once`;
    case 'leaky_bucket': {
      const wait = limit.max_delay && !/^0\D*$/.test(String(limit.max_delay));
      return `${n(limit.rate)}${per(limit.period)} paced evenly, ` +
        (wait ? `waiting up to ${limit.max_delay}` : 'no waiting');
    }
    case 'fixed_window':
      return n(limit.limit) + per(limit.window);
    case 'sliding_window':
      return `${n(limit.limit)} in any ${durationWords(limit.window)} (estimated)`;
    case 'sliding_log':
      return `${n(limit.limit)} in any ${durationWords(limit.window)} (exact)`;
    case 'concurrency':
      return `${n(limit.limit)} in flight, lease ${n(limit.lease_ttl)}`;
    default:
      return String(limit?.algorithm ?? 'unknown limit');
  }
}

// Every limit of a policy, joined by "; " (a request must pass them all).
export function policyWords(policy) {
  return (policy?.limits ?? []).map(limitWords).join('; ');
}

// The form fields of each algorithm, in document order (DESIGN.md §5a).
export const ALGORITHM_FIELDS = {
  token_bucket: ['capacity', 'refill', 'period', 'refill_mode', 'initial'],
  gcra: ['rate', 'period', 'burst'],
  leaky_bucket: ['rate', 'period', 'max_delay'],
  fixed_window: ['limit', 'window'],
  sliding_window: ['limit', 'window'],
  sliding_log: ['limit', 'window'],
  concurrency: ['limit', 'lease_ttl'],
};

// Fields holding a duration ("1s"); the others are integers, except refill_mode.
export const DURATION_FIELDS = new Set(['period', 'window', 'max_delay', 'lease_ttl']);
