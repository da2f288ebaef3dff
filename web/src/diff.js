// Text of a policy document for reading and comparing, and a line diff between two of them.
// Pure functions of the document and the algorithm catalogue (tests/unit/diff.test.js).

import { fieldsOf } from './catalogue.js';

const AUDIT = new Set(['version', 'created_by', 'updated_by', 'created_at', 'updated_at']);
const ORDER = ['name', 'description', 'apps', 'mode', 'on_store_failure', 'enabled', 'limits'];

// `object`'s keys in the order of `order`, then any others alphabetically (the server's JSON
// sorts keys; people read documents in the order of DESIGN.md §5a).
function ordered(object, order) {
  const rank = (key) => (order.includes(key) ? order.indexOf(key) : order.length);
  const keys = Object.keys(object).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, object[key]]));
}

// The document without its audit fields (what a person edits), keys in document order.
export function editable(policy) {
  const out = {};
  for (const [key, value] of Object.entries(policy ?? {})) {
    if (!AUDIT.has(key)) out[key] = value;
  }
  if (Array.isArray(out.limits)) {
    out.limits = out.limits.map((limit) =>
      ordered(limit, ['algorithm', ...fieldsOf(limit.algorithm)]));
  }
  return ordered(out, ORDER);
}

function scalar(value) {
  if (typeof value === 'string') {
    return /^[A-Za-z0-9._/][A-Za-z0-9._\-/ *]*$/.test(value) && !/ $/.test(value) &&
      !/^(true|false|null|yes|no|on|off|~|[-+]?\d[\d.eE+-]*)$/i.test(value)
      ? value
      : JSON.stringify(value);
  }
  return JSON.stringify(value);
}

// YAML of a JSON value (objects, arrays, scalars), as the CLI's export would read it back.
export function toYaml(value, indent = '') {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((v) => v === null || typeof v !== 'object')) {
      return '[' + value.map(scalar).join(', ') + ']';
    }
    return value
      .map((item) => {
        const body = toYaml(item, indent + '  ');
        return '\n' + indent + '- ' + body.replace(/^\n\s*/, '');
      })
      .join('');
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    return entries
      .map(([key, v]) => {
        const body = toYaml(v, indent + '  ');
        const nested = v !== null && typeof v === 'object' && body.startsWith('\n');
        return '\n' + indent + key + ':' + (nested ? body : ' ' + body);
      })
      .join('');
  }
  return scalar(value);
}

export function documentYaml(policy) {
  // editable() also orders the keys.
  return toYaml(editable(policy)).replace(/^\n/, '') + '\n';
}

// Lines of `before` and `after` as [{op: ' '|'-'|'+', text}], by longest common subsequence.
export function diffLines(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: '-', text: a[i++] });
    } else {
      out.push({ op: '+', text: b[j++] });
    }
  }
  while (i < a.length) out.push({ op: '-', text: a[i++] });
  while (j < b.length) out.push({ op: '+', text: b[j++] });
  return out;
}
