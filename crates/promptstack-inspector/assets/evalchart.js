// Two versions side by side: each version's mean pass rate with its interval, and the paired
// difference (candidate − base) with its interval, drawn as SVG from an eval `compare` answer.
// Like the cache chart it carries its own text alternative (a <title> and a <desc> that state
// every number), and like every view it is built with DOM calls only: a version id, a ref or a
// reason from the server is text, never markup.

import { h, svg } from './dom.js';

/** The normal quantile of the 95 % two-sided interval drawn around each version's pass rate. */
const Z95 = 1.959963984540054;

const finite = (x) => typeof x === 'number' && Number.isFinite(x);
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

/** A rate in 0–1 as a percentage with one decimal: `62.5 %`. */
export const percent = (x) => (finite(x) ? `${(x * 100).toFixed(1)} %` : 'unknown');

/** A difference of rates as signed percentage points: `+12.5 points`. */
export const points = (x) => {
  if (!finite(x)) return 'unknown';
  const v = x * 100;
  const text = Math.abs(v).toFixed(1);
  return `${v > 0 && text !== '0.0' ? '+' : v < 0 && text !== '0.0' ? '−' : ''}${text} points`;
};

/** The Wilson score interval of `passes` of `runs` at 95 %; null without runs. */
export function wilson95(passes, runs) {
  if (!finite(passes) || !finite(runs) || runs <= 0 || passes < 0 || passes > runs) return null;
  const p = passes / runs;
  const z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * runs)) / (1 + z2 / runs);
  const half = (Z95 * Math.sqrt((p * (1 - p)) / runs + z2 / (4 * runs * runs))) / (1 + z2 / runs);
  return { low: clamp(centre - half, 0, 1), high: clamp(centre + half, 0, 1) };
}

const short = (id, max = 16) => {
  const s = String(id ?? '');
  return s.length > max ? `${s.slice(0, max - 2)}…` : s;
};

/** How a side is named in text: its ref, and the version it resolved to when that differs. */
const sideName = (side) => {
  if (!side) return 'unknown';
  return side.ref && side.ref !== side.version ? `${side.ref} (${short(side.version)})` : short(side.version ?? side.ref);
};

/**
 * The comparison from the candidate's side: `comparison` orders its versions by id (a < b) with
 * `difference = b − a`; when the candidate is `a`, every number is turned round.
 */
export function fromCandidate(answer) {
  const outcome = answer.comparison?.outcome;
  if (!outcome || outcome.status !== 'compared') return null;
  const { a, b } = answer.comparison;
  const candidate = answer.candidate?.version;
  // A pair that does not hold the candidate cannot be read from its side.
  if (candidate !== a && candidate !== b) return null;
  const candidateIsB = b === candidate;
  const sign = candidateIsB ? 1 : -1;
  const interval = outcome.interval ?? {};
  return {
    scenarios: outcome.scenarios,
    meanBase: candidateIsB ? outcome.mean_a : outcome.mean_b,
    meanCandidate: candidateIsB ? outcome.mean_b : outcome.mean_a,
    difference: finite(outcome.difference) ? sign * outcome.difference : NaN,
    low: finite(interval.low) && finite(interval.high) ? (candidateIsB ? interval.low : -interval.high) : NaN,
    high: finite(interval.low) && finite(interval.high) ? (candidateIsB ? interval.high : -interval.low) : NaN,
    mde: outcome.mde,
    verdict: outcome.verdict ?? {},
  };
}

/** The verdict of a comparison in words; "no difference shown" is a verdict like the others. */
export function verdictText(answer) {
  const c = answer.comparison;
  if (!c) return 'No comparison: both versions need a finished run of this suite on this model.';
  if (c.outcome?.status === 'not_compared') return `Not compared: ${c.outcome.reason ?? 'no reason given'}.`;
  const d = fromCandidate(answer);
  if (!d) return 'No comparison.';
  const mde = finite(d.mde?.planned) ? ` A difference smaller than about ${points(d.mde.planned).replace(/^\+/, '')} could have gone unseen.` : '';
  switch (d.verdict.verdict) {
    case 'no_difference_shown':
      return `No difference shown: the interval of the difference includes zero.${mde}`;
    case 'favours': {
      const v = d.verdict.version_id;
      const who = v === answer.candidate?.version ? 'the candidate' : v === answer.base?.version ? 'the base' : `version ${short(v)}`;
      return `The data favour ${who} (${short(v)}): the interval of the difference lies wholly on one side of zero.`;
    }
    case 'too_few_scenarios':
      return `Too few shared scenarios for a verdict (${d.scenarios ?? 0} run under both; a verdict needs ${d.verdict.needed ?? 'more'}).`;
    default:
      return `Verdict: ${String(d.verdict.verdict ?? 'unknown')}.`;
  }
}

/** Each side's summary and its interval (Wilson at 95 % over the side's runs). */
function sides(answer) {
  const find = (side) => (answer.summaries ?? []).find((s) => side && s.version_id === side.version) ?? null;
  return [['base', answer.base], ['candidate', answer.candidate]].map(([role, side]) => {
    const summary = find(side);
    return {
      role,
      side,
      summary,
      interval: summary ? wilson95(summary.passes, summary.runs) : null,
    };
  });
}

const sideText = ({ role, side, summary, interval }) => (summary
  ? `${role} ${sideName(side)}: mean pass rate ${percent(summary.mean_pass_rate)} over ${summary.scenarios} scenarios ` +
    `(${summary.passes} of ${summary.runs} runs passed; 95 % Wilson interval ${percent(interval?.low)} to ${percent(interval?.high)})`
  : `${role} ${sideName(side)}: no finished run`);

const differenceText = (d) => (d
  ? `candidate − base: ${points(d.difference)} over ${d.scenarios} shared scenarios (interval ${points(d.low)} to ${points(d.high)})`
  : 'candidate − base: not computed');

// The layout, in SVG user units.
const LEFT = 200;
const PLOT = 360;
const W = LEFT + PLOT + 110;
const ROW = 30;

/** The chart of a `compare` answer; every number in it is also in its <title>/<desc>. */
export function compareChart(answer) {
  const rows = sides(answer);
  const d = fromCandidate(answer);
  const title = `Pass rates of ${sideName(answer.base)} and ${sideName(answer.candidate)} on ${answer.suite ?? 'the suite'}, model ${answer.model ?? ''}`;
  const desc = [...rows.map(sideText), differenceText(d), verdictText(answer)].join('. ');
  const rateX = (x) => LEFT + clamp(x, 0, 1) * PLOT;
  const diffX = (x) => LEFT + ((clamp(x, -1, 1) + 1) / 2) * PLOT;
  const top = 34;
  const diffTop = top + 2 * ROW + 56;
  const height = diffTop + ROW + 40;
  const parts = [
    svg('title', { id: 'ec-title', text: title }),
    svg('desc', { id: 'ec-desc', text: desc }),
    svg('rect', { class: 'bg', width: W, height }),
    svg('text', { x: LEFT, y: top - 14, text: 'mean pass rate, with its 95 % interval' }),
  ];
  for (const v of [0, 0.5, 1]) {
    parts.push(svg('line', { class: 'grid', x1: rateX(v), y1: top - 6, x2: rateX(v), y2: top + 2 * ROW - 6 }),
      svg('text', { x: rateX(v), y: top + 2 * ROW + 8, 'text-anchor': 'middle', text: `${v * 100} %` }));
  }
  rows.forEach((row, k) => {
    const y = top + k * ROW + 8;
    const group = svg('g', { class: `side side-${row.role}` },
      svg('title', { text: sideText(row) }),
      svg('text', { x: LEFT - 8, y: y + 4, 'text-anchor': 'end', text: `${row.role}: ${short(row.side?.ref ?? row.side?.version, 14)}` }));
    if (row.summary && finite(row.summary.mean_pass_rate)) {
      if (row.interval) {
        group.append(svg('line', { class: 'interval', x1: rateX(row.interval.low), y1: y, x2: rateX(row.interval.high), y2: y }),
          svg('line', { class: 'interval', x1: rateX(row.interval.low), y1: y - 5, x2: rateX(row.interval.low), y2: y + 5 }),
          svg('line', { class: 'interval', x1: rateX(row.interval.high), y1: y - 5, x2: rateX(row.interval.high), y2: y + 5 }));
      }
      group.append(svg(row.role === 'base' ? 'circle' : 'rect', row.role === 'base'
        ? { class: 'point', cx: rateX(row.summary.mean_pass_rate), cy: y, r: 5 }
        : { class: 'point', x: rateX(row.summary.mean_pass_rate) - 5, y: y - 5, width: 10, height: 10 }),
      svg('text', { x: LEFT + PLOT + 10, y: y + 4, text: percent(row.summary.mean_pass_rate) }));
    } else {
      group.append(svg('text', { x: LEFT, y: y + 4, text: 'no finished run' }));
    }
    parts.push(group);
  });
  parts.push(svg('text', { x: LEFT, y: diffTop - 14, text: 'paired difference, candidate − base (percentage points), with its interval' }));
  for (const v of [-1, -0.5, 0, 0.5, 1]) {
    parts.push(svg('line', { class: v === 0 ? 'zero' : 'grid', x1: diffX(v), y1: diffTop - 6, x2: diffX(v), y2: diffTop + ROW - 6 }),
      svg('text', { x: diffX(v), y: diffTop + ROW + 8, 'text-anchor': 'middle', text: v === 0 ? '0' : `${v > 0 ? '+' : '−'}${Math.abs(v * 100)}` }));
  }
  const y = diffTop + 8;
  const diffGroup = svg('g', { class: 'difference' }, svg('title', { text: differenceText(d) }),
    svg('text', { x: LEFT - 8, y: y + 4, 'text-anchor': 'end', text: 'candidate − base' }));
  if (d && finite(d.difference)) {
    if (finite(d.low) && finite(d.high)) {
      diffGroup.append(svg('line', { class: 'interval', x1: diffX(d.low), y1: y, x2: diffX(d.high), y2: y }),
        svg('line', { class: 'interval', x1: diffX(d.low), y1: y - 5, x2: diffX(d.low), y2: y + 5 }),
        svg('line', { class: 'interval', x1: diffX(d.high), y1: y - 5, x2: diffX(d.high), y2: y + 5 }));
    }
    diffGroup.append(svg('path', { class: 'point', d: `M${diffX(d.difference)} ${y - 6} l6 6 l-6 6 l-6 -6 z` }),
      svg('text', { x: LEFT + PLOT + 10, y: y + 4, text: points(d.difference) }));
  } else {
    diffGroup.append(svg('text', { x: LEFT, y: y + 4, text: 'not computed' }));
  }
  parts.push(diffGroup);
  return svg('svg', {
    class: 'evalchart', width: W, height, viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-labelledby': 'ec-title ec-desc',
  }, parts);
}

/** The comparison as a whole: the chart, the same numbers in words, the verdict and the gate. */
export function compareView(answer) {
  const rows = sides(answer);
  const d = fromCandidate(answer);
  const gate = answer.gate;
  const run = (side) => (side?.run ? `run ${side.run}` : 'no finished run');
  return h('div.compare', {},
    h('p', {}, 'Suite ', h('code', { text: String(answer.suite ?? '') }), ', model ', h('code', { text: String(answer.model ?? '') }),
      `. Base: ${sideName(answer.base)}, ${run(answer.base)}; candidate: ${sideName(answer.candidate)}, ${run(answer.candidate)}.`),
    h('div.chart', {}, compareChart(answer)),
    h('ul.compare-text', { 'aria-label': 'The comparison in words' },
      rows.map((r) => h('li', { text: sideText(r) })),
      h('li', { text: differenceText(d) })),
    h('p.verdict', {}, h('strong', { text: 'Verdict: ' }), h('span', { text: verdictText(answer) })),
    gate ? h(`p.gate.${gate.passes ? 'gate-pass' : 'gate-fail'}`, {},
      h('strong', { text: `Gate ${gate.passes ? 'passes' : 'fails'}: ` }),
      h('span', { text: `${gate.suite ?? ''}, at most ${points(gate.max_drop).replace(/^\+/, '')} drop at ${percent(gate.confidence)} confidence — ${gate.reason ?? ''}` }))
      : null);
}
