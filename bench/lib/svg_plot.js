// Minimal SVG line charts for bench/compare: log or linear axes, a legend, dashed series for
// ceilings. No dependencies; the output is plain SVG 1.1 text that renders on GitHub.
'use strict';

const PALETTE = ['#1f77b4', '#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#7f7f7f',
                 '#17becf'];

function escapeXml(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;');
}

// Round numbers for tick labels: 1 2 5 10 20 50... for log axes, "nice" steps for linear ones.
function logTicks(min, max) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); ++e) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= min * 0.999 && v <= max * 1.001) ticks.push(v);
    }
  }
  return ticks;
}

function linearTicks(min, max, count = 6) {
  const raw = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(v);
  return ticks;
}

function formatNumber(v) {
  if (v >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
}

function legendEntry(x, y, s, color) {
  const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
  return `<line x1="${x}" y1="${y}" x2="${x + 26}" y2="${y}" stroke="${color}" ` +
         `stroke-width="2"${dash}/>` +
         `<text x="${x + 32}" y="${y}" dominant-baseline="middle" font-size="12">` +
         `${escapeXml(s.name)}</text>`;
}

// chart: {title, subtitle, width, height, x: {label, log, categories?, values?}, y: {label, log,
//   min?, max?, format?}, series: [{name, points: [[x, y]...], dashed?, color?}], legend?}
// With x.categories the x values are indices into it, equally spaced.
function lineChart(chart) {
  const width = chart.width || 760;
  const height = chart.height || 440;
  const legend = chart.legend !== false;
  const margin = {left: 78, right: legend ? 280 : 24, top: chart.subtitle ? 62 : 46, bottom: 58};
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const all = chart.series.flatMap((s) => s.points).filter((p) => p[1] != null && p[1] > 0);
  const ys = all.map((p) => p[1]);
  let yMin = chart.y.min ?? Math.min(...ys);
  let yMax = chart.y.max ?? Math.max(...ys);
  if (chart.y.log) {
    yMin = 10 ** Math.floor(Math.log10(yMin));
    yMax = 10 ** Math.ceil(Math.log10(yMax));
  } else {
    yMin = chart.y.min ?? 0;
    yMax = yMax * 1.08;
  }
  const categories = chart.x.categories;
  const xs = categories ? categories.map((_, i) => i) : all.map((p) => p[0]);
  let xMin = Math.min(...xs);
  let xMax = Math.max(...xs);
  if (categories) {
    xMin -= 0.3;
    xMax += 0.3;
  } else if (chart.x.log) {
    xMin /= 1.5;
    xMax *= 1.5;
  }
  const tx = (x) => margin.left + plotW *
      (chart.x.log && !categories ? Math.log(x / xMin) / Math.log(xMax / xMin)
                                  : (x - xMin) / (xMax - xMin));
  const ty = (y) => margin.top + plotH *
      (1 - (chart.y.log ? Math.log(y / yMin) / Math.log(yMax / yMin) : (y - yMin) / (yMax - yMin)));
  const fmtY = chart.y.format || formatNumber;

  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
           `viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" ` +
           `font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${margin.left}" y="22" font-size="15" font-weight="bold">` +
           `${escapeXml(chart.title)}</text>`);
  if (chart.subtitle) {
    out.push(`<text x="${margin.left}" y="40" fill="#555">${escapeXml(chart.subtitle)}</text>`);
  }
  // Grid and y ticks.
  const yTicks = chart.y.log ? logTicks(yMin, yMax) : linearTicks(yMin, yMax);
  for (const v of yTicks) {
    const y = ty(v).toFixed(1);
    out.push(`<line x1="${margin.left}" y1="${y}" x2="${margin.left + plotW}" y2="${y}" ` +
             `stroke="#e5e5e5"/>`);
    out.push(`<text x="${margin.left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">` +
             `${escapeXml(fmtY(v))}</text>`);
  }
  // x ticks.
  const xTicks = categories ? categories.map((_, i) => i)
                            : [...new Set(xs)].sort((a, b) => a - b);
  for (const v of xTicks) {
    const x = tx(v).toFixed(1);
    out.push(`<line x1="${x}" y1="${margin.top}" x2="${x}" y2="${margin.top + plotH}" ` +
             `stroke="#f0f0f0"/>`);
    out.push(`<text x="${x}" y="${margin.top + plotH + 18}" text-anchor="middle">` +
             `${escapeXml(categories ? categories[v] : formatNumber(v))}</text>`);
  }
  // Axes.
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" ` +
           `fill="none" stroke="#333"/>`);
  out.push(`<text x="${margin.left + plotW / 2}" y="${height - 14}" text-anchor="middle">` +
           `${escapeXml(chart.x.label)}</text>`);
  out.push(`<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" ` +
           `text-anchor="middle">${escapeXml(chart.y.label)}</text>`);
  // Series.
  chart.series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const points = s.points.filter((p) => p[1] != null && p[1] > 0);
    if (points.length === 0) return;
    const path = points.map((p, j) => `${j === 0 ? 'M' : 'L'}${tx(p[0]).toFixed(1)},` +
                                      `${ty(p[1]).toFixed(1)}`).join(' ');
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
    for (const p of points) {
      out.push(`<circle cx="${tx(p[0]).toFixed(1)}" cy="${ty(p[1]).toFixed(1)}" r="3.5" ` +
               `fill="${color}"><title>${escapeXml(`${s.name}: ${fmtY(p[1])}`)}</title>` +
               `</circle>`);
    }
    if (legend) out.push(legendEntry(margin.left + plotW + 14, margin.top + 14 + i * 20, s, color));
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

// Several charts side by side in one SVG sharing one legend (the first chart's series) on the
// right; each is rendered by lineChart without its own legend, then translated.
function panels(charts, title) {
  const legendWidth = 280;
  const widthOf = (c) => c.width || 760;
  const width = charts.reduce((w, c) => w + widthOf(c), 0) + legendWidth;
  const top = title ? 30 : 0;
  const height = Math.max(...charts.map((c) => c.height || 440)) + top;
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
               `viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" ` +
               `font-size="12">`];
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  if (title) {
    out.push(`<text x="12" y="22" font-size="15" font-weight="bold">${escapeXml(title)}</text>`);
  }
  let x = 0;
  for (const chart of charts) {
    const svg = lineChart({...chart, legend: false});
    const inner = svg.replace(/^<svg[^>]*>\n/, '').replace(/<\/svg>\n$/, '');
    out.push(`<g transform="translate(${x} ${top})">${inner}</g>`);
    x += widthOf(chart);
  }
  (charts[0] ? charts[0].series : []).forEach((s, i) => {
    out.push(legendEntry(x + 10, top + 60 + i * 20, s, s.color || PALETTE[i % PALETTE.length]));
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

module.exports = {lineChart, panels, formatNumber};
