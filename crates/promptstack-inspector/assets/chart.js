// The cache chart, drawn from a `cache-sim` report. This is the same drawing as the Rust
// `cache_chart_svg` (crates/promptstack-inspector/src/chart.rs), step for step with the same
// integer arithmetic and the same layout rules (cache-chart.json); the browser test checks that
// both produce the same bytes. Change the two together.

const escape = (text) =>
  String(text).replace(/[&<>"\u0000-\u001f\u007f-\u009f]/g, (c) =>
    ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? '?');

const div = (a, b) => Math.floor(a / b);

function percent(part, whole) {
  if (whole === 0) return '0.0 %';
  const tenths = div(part * 2000 + whole, 2 * whole);
  return `${div(tenths, 10)}.${tenths % 10} %`;
}

function factor(x) {
  const t = Math.max(0, Math.round(x * 1000));
  return `${div(t, 1000)}.${String(t % 1000).padStart(3, '0')}×`;
}

function totals(side, f) {
  return `${side}: ${f.requests} requests, ${f.input_tokens} input tokens: read ${percent(f.read, f.input_tokens)}, ` +
    `written ${percent(f.written, f.input_tokens)}, uncached ${percent(f.uncached, f.input_tokens)}; ` +
    `cost ${factor(f.relative_cost)} of uncached`;
}

/** The chart of `report` as SVG text, with the layout rules `l` (cache-chart.json). */
export function cacheChartSvg(report, l) {
  const turns = report.per_turn.length;
  const group = 2 * l.bar + l.pair_gap + l.turn_gap;
  const plotWidth = turns * group;
  const width = Math.max(l.min_width, l.left + plotWidth + l.right);
  const bottom = l.plot_top + l.plot_height;
  const legend = bottom + 40;
  const height = legend + 4 * l.line_height + 8;
  let max = 0;
  for (const t of report.per_turn) {
    for (const c of [t.ours, t.naive]) max = Math.max(max, c.read + c.written + c.uncached);
  }
  max = Math.max(max, 1);
  const scale = (v) => div(v * l.plot_height * 2 + max, 2 * max);
  const title = `Cache over a thread: ${report.format} ${report.model}, target ${report.target}, ` +
    `${report.turns} turns ${report.gap_seconds} s apart`;
  const ours = totals('ours', report.ours);
  const naive = totals('naive', report.naive);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" class="cc" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="cc-title cc-desc">\n`;
  s += `<title id="cc-title">${escape(title)}</title>\n`;
  s += `<desc id="cc-desc">Tokens per turn read from the cache, written to it and uncached; in each turn the left bar is ours and the right, lighter bar the naive baseline. ${escape(ours)}. ${escape(naive)}.</desc>\n`;
  s += `<style>${l.style}</style>\n`;
  s += `<defs>${l.defs}</defs>\n`;
  s += `<rect class="bg" width="${width}" height="${height}"/>\n`;
  const right = l.left + plotWidth;
  s += `<text x="${l.left}" y="${l.plot_top - 10}">tokens per turn</text>\n`;
  for (const v of [0, div(max, 2), max]) {
    const y = bottom - scale(v);
    s += `<line class="grid" x1="${l.left}" y1="${y}" x2="${right}" y2="${y}"/><text x="${l.left - 6}" y="${y + 4}" text-anchor="end">${v}</text>\n`;
  }
  s += `<line class="axis" x1="${l.left}" y1="${l.plot_top}" x2="${l.left}" y2="${bottom}"/>\n`;
  report.per_turn.forEach((turn, i) => {
    const x0 = l.left + i * group + div(l.turn_gap, 2);
    s += `<g><title>turn ${turn.turn}${turn.mcp_failed ? ' (an MCP server failed)' : ''}: ours read ${turn.ours.read}, written ${turn.ours.written}, uncached ${turn.ours.uncached}; naive read ${turn.naive.read}, written ${turn.naive.written}, uncached ${turn.naive.uncached}</title>`;
    for (const [side, c, x] of [['ours', turn.ours, x0], ['naive', turn.naive, x0 + l.bar + l.pair_gap]]) {
      let below = 0;
      let sum = 0;
      for (const series of l.series) {
        sum += c[series.key];
        const top = scale(sum);
        if (top > below) {
          s += `<rect class="s-${series.key} side-${side}" x="${x}" y="${bottom - top}" width="${l.bar}" height="${top - below}"/>`;
        }
        below = top;
      }
    }
    s += '</g>\n';
    if (turn.turn === 1 || turn.turn % l.label_every === 0) {
      s += `<text x="${l.left + i * group + div(group, 2)}" y="${bottom + 16}" text-anchor="middle">${turn.turn}</text>\n`;
    }
  });
  s += `<line class="axis" x1="${l.left}" y1="${bottom}" x2="${right}" y2="${bottom}"/><text x="${l.left - 6}" y="${bottom + 16}" text-anchor="end">turn</text>\n`;
  l.series.forEach((series, k) => {
    const x = l.left + k * 190;
    s += `<rect class="s-${series.key} side-ours" x="${x}" y="${legend - 10}" width="12" height="12"/><text x="${x + 16}" y="${legend}">${escape(series.label)}</text>\n`;
  });
  const lines = ['In each turn the left bar is ours, the right (lighter) bar the naive baseline.', ours, naive];
  lines.forEach((line, k) => {
    s += `<text x="${l.left}" y="${legend + (k + 1) * l.line_height}">${escape(line)}</text>\n`;
  });
  s += '</svg>\n';
  return s;
}
