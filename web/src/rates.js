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

export const SERIES = ['allowed', 'denied', 'shadow_denied', 'degraded'];

// SVG path data for each series of `points` ({at, allowed, denied, ...} per second) in a
// `width` × `height` box: time on x over the last `span` µs ending at the newest point, counts
// on y from 0 (bottom) to the largest count (top). Pure (tests/unit/rates.test.js).
export function chartPaths(points, width, height, span = 15 * 60 * 1e6) {
  const out = { max: 0 };
  for (const s of SERIES) out[s] = '';
  if (!points?.length) return out;
  const end = points[points.length - 1].at;
  const start = end - span;
  const shown = points.filter((p) => p.at >= start);
  const max = Math.max(1, ...shown.flatMap((p) => SERIES.map((s) => p[s] ?? 0)));
  out.max = max;
  const x = (at) => +(((at - start) / span) * width).toFixed(1);
  const y = (v) => +(height - (v / max) * height).toFixed(1);
  for (const s of SERIES) {
    out[s] = shown.map((p, i) => `${i ? 'L' : 'M'}${x(p.at)},${y(p[s] ?? 0)}`).join('');
  }
  return out;
}

// Totals of each series over `points`.
export function totals(points) {
  const out = Object.fromEntries(SERIES.map((s) => [s, 0]));
  for (const p of points ?? []) for (const s of SERIES) out[s] += p[s] ?? 0;
  return out;
}
