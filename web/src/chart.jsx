// The live chart of one policy: decisions per second over the last 15 minutes on this server
// (GET /v1/policies/{name}/rates), redrawn every few seconds. SVG drawn from path data; the
// totals are also given as text for screen readers and tests.
import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { chartPaths, SERIES, totals } from './rates.js';

export const CHART_POLL_MS = 3000;
const WIDTH = 600;
const HEIGHT = 120;
const LABELS = { allowed: 'allowed', denied: 'denied', shadow_denied: 'shadow denied', degraded: 'degraded' };

export function LiveChart({ name }) {
  const [points, setPoints] = useState([]);
  useEffect(() => {
    let stopped = false;
    const load = () =>
      api('GET', `/v1/policies/${enc(name)}/rates`)
        .then((answer) => { if (!stopped) setPoints(answer.points); })
        .catch(() => {});
    load();
    const timer = setInterval(load, CHART_POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [name]);
  const paths = chartPaths(points, WIDTH, HEIGHT);
  const sums = totals(points);
  return (
    <figure class="chart" aria-label="Live decisions">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" preserveAspectRatio="none"
        aria-label={`Decisions per second, last 15 minutes, peak ${paths.max}`}>
        <line x1="0" y1={HEIGHT} x2={WIDTH} y2={HEIGHT} class="axis" />
        {SERIES.map((s) => paths[s] && <path d={paths[s]} class={'series ' + s} />)}
      </svg>
      <figcaption>
        <span class="muted">Per second, last 15 minutes (peak {paths.max}/s):</span>
        {SERIES.map((s) => (
          <span class={'legend ' + s} data-series={s}>{sums[s]} {LABELS[s]}</span>
        ))}
      </figcaption>
    </figure>
  );
}
