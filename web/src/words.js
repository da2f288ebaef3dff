// Limits in words for the policy list: "5 at once, 2 per second", from the words of the
// algorithm catalogue the server serves (catalogue.js). Pure functions (unit-tested in
// tests/unit/words.test.js); the same facts as the CLI's describe_limit, phrased for people.
import { algorithmOf, catalogue } from './catalogue.js';

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

// "0s", "0ms", 0 or absent: no duration.
const zero = (value) => !value || /^0\D*$/.test(String(value));

// Whether a phrase of the catalogue's words applies to `limit` (GET /v1/algorithms explains
// `when`).
function applies(phrase, limit) {
  const value = limit[phrase.field];
  switch (phrase.when ?? 'always') {
    case 'always':
      return true;
    case 'equals':
      return value === phrase.operand;
    case 'not_equals':
      return value !== phrase.operand;
    case 'below':
      return value !== undefined && value < limit[phrase.operand];
    case 'nonzero':
      return !zero(value);
    case 'zero':
      return zero(value);
    default:
      return false;
  }
}

// "{field}": the value as written ("?" when missing); "{field:words}": a duration in words;
// "{field+1}": a count plus one.
function fill(text, limit) {
  return text.replace(/\{(\w+)(:words|\+1)?\}/g, (_, field, how) => {
    if (how === ':words') return durationWords(limit[field]);
    if (how === '+1') return String(Number(limit[field] ?? 0) + 1);
    return n(limit[field]);
  });
}

// A limit in the words of its algorithm's catalogue entry; an algorithm the catalogue does not
// know is named rather than guessed.
export function limitWords(limit, algorithms = catalogue()) {
  const phrases = algorithmOf(limit?.algorithm, algorithms)?.words;
  if (!phrases) return String(limit?.algorithm ?? 'unknown limit');
  return phrases.filter((phrase) => applies(phrase, limit)).map((p) => fill(p.text, limit)).join('');
}

// Every limit of a policy, joined by "; " (a request must pass them all).
export function policyWords(policy, algorithms = catalogue()) {
  return (policy?.limits ?? []).map((limit) => limitWords(limit, algorithms)).join('; ');
}
