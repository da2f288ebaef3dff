// Rates from cumulative counters: the console samples GET /v1/stats/decisions every few seconds
// and shows per-second rates between the last two samples. Pure (tests/unit/rates.test.js).

// `prev` and `next`: {at (µs), policies: {name: {allowed, denied, shadow_denied, degraded}}}.
// Returns {name: {allowed, denied, shadow_denied, degraded}} in decisions per second.
export function ratesBetween(prev, next) {
  const out = {};
  if (!prev || !next || next.at <= prev.at) return out;
  const seconds = (next.at - prev.at) / 1e6;
  for (const [name, counts] of Object.entries(next.policies ?? {})) {
    const before = prev.policies?.[name] ?? {};
    const rate = {};
    for (const key of ['allowed', 'denied', 'shadow_denied', 'degraded']) {
      rate[key] = Math.max(0, (counts[key] ?? 0) - (before[key] ?? 0)) / seconds;
    }
    out[name] = rate;
  }
  return out;
}

// "0/s", "0.4/s", "12/s", "1.2k/s".
export function formatRate(perSecond) {
  if (!perSecond) return '0/s';
  if (perSecond >= 1000) return (perSecond / 1000).toFixed(1) + 'k/s';
  if (perSecond >= 10) return Math.round(perSecond) + '/s';
  return perSecond.toFixed(1).replace(/\.0$/, '') + '/s';
}
