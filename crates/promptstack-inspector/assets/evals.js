// The Evals tab: the selected agent's eval runs, a form that starts one (editors and admins), a
// run's matrix with its progress (polled while the run is queued or running and the tab is
// shown), a drill-down per cell with a link that opens the cell's send in the other tabs, and
// two versions compared side by side (evalchart.js).
//
// Run rows carry model output, which an attacker may have written: every string from the server
// goes into the page as text through `h`, and class names come from fixed tables only.

import { api, problemLines } from './api.js';
import { h, fill } from './dom.js';
import { compareView, percent } from './evalchart.js';

/** How often a queued or running run is read again while the tab is shown. */
export const POLL_MS = 2000;
/** Runs read per page of the list. */
const PAGE = 20;
/** Repetitions of one cell shown as their own buttons; the rest are counted. */
const MAX_MARKS = 12;
const ACTIVE = new Set(['queued', 'running']);
const VERDICT = { pass: 'passed', fail: 'failed', error: 'error' };
const STATES = new Set(['queued', 'running', 'done', 'cancelled', 'failed']);

const $ = (id) => document.getElementById(id);
const str = (x) => (x === undefined || x === null ? '' : String(x));
const short = (id) => {
  const s = str(id);
  return s.length > 16 ? `${s.slice(0, 14)}…` : s;
};
const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
const list = (x) => (Array.isArray(x) ? x : []);
const stateClass = (state) => (STATES.has(state) ? `state-${state}` : 'state-unknown');
const isActive = (run) => ACTIVE.has(run?.state);
const split = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);

/** A duration in seconds as `12 s`, `3 min 5 s` or `1 h 2 min`. */
export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Micro-dollars as dollars with six decimals, as the eval reports write them. */
export function dollars(micro) {
  const m = num(micro);
  if (m === null || m < 0) return 'unpriced';
  return `$${Math.floor(m / 1e6)}.${String(Math.round(m % 1e6)).padStart(6, '0')}`;
}

/** A run's progress in words: cells done of the total, failures and what is left. */
export function progressText(run) {
  const p = run.progress ?? {};
  const total = num(p.total) ?? 0;
  const done = num(p.done) ?? 0;
  const failed = num(p.failed) ?? 0;
  let tail = '';
  if (run.state === 'queued') tail = ' · queued';
  else if (run.state === 'running') tail = num(p.eta_seconds) !== null ? ` · about ${duration(p.eta_seconds)} left` : ' · estimating the time left';
  else tail = ` · ${str(run.state)}${run.finished_at ? ` at ${str(run.finished_at)}` : ''}`;
  return `${done} of ${total} cells done · ${failed} failed${tail}`;
}

/** A ref of a run as text: a label with its version, or a version id shortened. */
const refName = (r) => (r.version && r.version !== r.ref ? `${str(r.ref)} (${short(r.version)})` : `version ${short(r.ref ?? r.version)}`);
const refsText = (run) => list(run.refs).map((r, i) => `${refName(r)}${i === 0 ? ' — baseline' : ''}`).join(', ');

/** The table of runs, newest first; a run's id opens it. */
export function runsView(runs, selected, onOpen) {
  if (!runs.length) return h('p', { text: 'No eval runs of this agent yet.' });
  return h('table.runs', {},
    h('caption', { text: `${runs.length} runs, newest first; open one to see its matrix` }),
    h('thead', {}, h('tr', {}, ['run', 'suite', 'refs', 'models', 'state', 'progress', 'created'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, runs.map((run) => h(`tr.run${run.id === selected ? '.selected' : ''}`, { dataset: { run: str(run.id) } },
      h('td', {}, h('button.link', { type: 'button', 'aria-pressed': String(run.id === selected), onclick: () => onOpen(run.id) }, str(run.id))),
      h('td', {}, h('code', { text: str(run.suite) })),
      h('td', { text: refsText(run) }),
      h('td', { text: list(run.models).map(str).join(', ') }),
      h('td', {}, h(`span.badge.${stateClass(run.state)}`, { text: str(run.state) })),
      h('td', { text: progressText(run) }),
      h('td', { text: str(run.created_at) })))));
}

/** A run's heading, state, progress and (for editors and admins, while it goes) its cancel button. */
export function runHeader(run, canEdit, onCancel) {
  const p = run.progress ?? {};
  const total = Math.max(0, num(p.total) ?? 0);
  const done = Math.min(total, Math.max(0, num(p.done) ?? 0));
  return h('div.run-head', {},
    h('h3', { id: 'eval-run-heading', tabindex: '-1' }, 'Run ', h('code', { text: str(run.id) }), ' ',
      h(`span.badge.${stateClass(run.state)}`, { text: str(run.state) })),
    h('p', {}, 'Suite ', h('code', { text: str(run.suite) }), ` · refs ${refsText(run)} · models ${list(run.models).map(str).join(', ')} · ` +
      `${list(run.scenarios).length} scenarios × ${str(run.repeats)} repeats`),
    h('p.times', { text: `created ${str(run.created_at)}${run.created_by ? ` by key ${str(run.created_by)}` : ''}` +
      `${run.started_at ? ` · started ${str(run.started_at)}` : ''}${run.finished_at ? ` · finished ${str(run.finished_at)}` : ''}` }),
    run.message ? h('p.view-error', { text: `Why it ${run.state === 'failed' ? 'failed' : 'stopped'}: ${str(run.message)}` }) : null,
    h('div.progress-row', {},
      h('progress', { id: 'eval-progress', max: String(Math.max(total, 1)), value: String(done), 'aria-label': 'Cells done' }),
      h('span', { id: 'eval-progress-text', text: progressText(run) }),
      canEdit && isActive(run) ? h('button', { type: 'button', id: 'eval-cancel', onclick: onCancel }, 'Cancel run') : null));
}

/**
 * The matrix of a run: per model, one row per ref and one column per scenario; each cell holds
 * its repetitions (✓ passed, ✗ failed, ! error, · pending), each completed one a button that opens
 * its drill-down, and the cell's pass rate with its Wilson interval once statistics exist.
 * A cell's index is its place in versions × models × scenarios × repeats.
 */
export function matrixView(run, selectedIndex, onCell) {
  const refs = list(run.refs);
  const models = list(run.models);
  const scenarios = list(run.scenarios);
  const repeats = Math.max(1, Math.floor(num(run.repeats) ?? 1));
  const byIndex = new Map(list(run.results).map((r) => [r.index, r]));
  const stats = new Map(list(run.statistics?.cells).map((c) => [`${c.model}\u0000${c.version_id}\u0000${c.scenario}`, c]));
  const mark = (ref, model, scenario, index, r) => {
    const row = byIndex.get(index);
    const label = `${scenario}, ${refName(ref)}, ${model}, repetition ${r + 1}`;
    if (!row) {
      return h('span.mark.mark-pending', { title: `${label}: pending` },
        h('span', { 'aria-hidden': 'true', text: '·' }), h('span.visually-hidden', { text: `repetition ${r + 1} pending` }));
    }
    const [cls, symbol, word] = row.error ? ['error', '!', 'error'] : row.passed ? ['pass', '✓', 'passed'] : ['fail', '✗', 'failed'];
    return h(`button.mark.mark-${cls}${index === selectedIndex ? '.selected' : ''}`, {
      type: 'button', 'aria-label': `${label}: ${word}`, title: `${label}: ${word}${row.error ? ` (${str(row.error)})` : ''}`,
      'aria-pressed': String(index === selectedIndex), dataset: { index: String(index) }, onclick: () => onCell(index),
    }, symbol);
  };
  return models.map((model, mi) => h('table.matrix', { dataset: { model: str(model) } },
    h('caption', { text: `Model ${str(model)}: each cell lists its repetitions (✓ passed, ✗ failed, ! error, · pending) and its pass rate with a Wilson interval; a repetition opens its drill-down` }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'ref' }), scenarios.map((s) => h('th', { scope: 'col' }, h('code', { text: str(s) }))))),
    h('tbody', {}, refs.map((ref, vi) => h('tr', { dataset: { version: str(ref.version) } },
      h('th', { scope: 'row', title: str(ref.version) }, ref.version && ref.version !== ref.ref
        ? [str(ref.ref), h('code.version', { text: ` ${short(ref.version)}` })]
        : ['version ', h('code', { text: short(ref.ref ?? ref.version) })]),
      scenarios.map((scenario, si) => {
        const first = ((vi * models.length + mi) * scenarios.length + si) * repeats;
        const marks = [];
        for (let r = 0; r < Math.min(repeats, MAX_MARKS); r++) marks.push(mark(ref, model, scenario, first + r, r));
        const cell = stats.get(`${model}\u0000${ref.version}\u0000${scenario}`);
        return h('td.cell', {},
          h('span.marks', {}, marks, repeats > MAX_MARKS ? h('span.more', { text: ` +${repeats - MAX_MARKS} more` }) : null),
          cell ? h('span.rate', { text: `${str(cell.passes)}/${str(cell.runs)} · ${percent(cell.pass_rate)} (${percent(cell.interval?.low)}–${percent(cell.interval?.high)})` }) : null);
      }))))));
}

/** The drill-down of one completed cell. */
export function cellView(cell, onOpen) {
  const row = cell.row ?? {};
  const t = row.transcript ?? {};
  const usage = row.usage ?? {};
  const latency = row.latency ?? {};
  let request = str(t.request);
  try { request = JSON.stringify(JSON.parse(request), null, 2); } catch { /* shown as sent */ }
  const calls = list(t.tool_calls);
  const recorded = list(row.turn?.calls);
  const verdict = row.error ? 'ended in an error' : row.passed ? 'passed' : 'failed';
  const tokens = (x) => (num(x) === null ? 'not reported' : String(x));
  const ms = (us) => (num(us) === null ? 'not measured' : `${(us / 1000).toFixed(1)} ms`);
  return h('div.cell-detail', {},
    h('h3', { id: 'eval-cell-heading', tabindex: '-1' }, `Cell ${str(cell.index)}: `, h('code', { text: str(cell.scenario) }),
      ` · ${str(cell.model)} · repetition ${(num(cell.repetition) ?? 0) + 1} — ${verdict}`),
    h('p', {}, 'Version ', h('code', { text: str(cell.version) }), ` · target ${str(cell.target)} · completed ${str(cell.completed_at)}`),
    h('p', {}, h('button', { type: 'button', id: 'eval-open-send', onclick: () => onOpen(cell) }, 'Open this send in the other tabs'),
      ' (this version, this send and target, in the Blocks and Request tabs)'),
    row.error ? h('p.view-error', { text: `Error: ${str(row.error)}` }) : null,
    h('table.assertions', {}, h('caption', { text: `${list(row.assertions).length} assertions` }),
      h('thead', {}, h('tr', {}, ['assertion', 'kind', 'verdict', 'reason'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, list(row.assertions).map((a) => h(`tr.verdict-${VERDICT[a.verdict] ? a.verdict : 'unknown'}`, {},
        h('td', {}, h('code', { text: str(a.id) })), h('td', { text: str(a.kind) }),
        h('td.verdict', { text: VERDICT[a.verdict] ?? str(a.verdict) }), h('td.reason', { text: str(a.reason) }))))),
    h('h4', { text: 'Answer as processed' }),
    h('pre.text.answer', { tabindex: '0', 'aria-label': 'Answer as processed', text: t.answer ? str(t.answer) : '(empty)' }),
    h('table.tool-calls', {}, h('caption', { text: `${calls.length} tool calls` }),
      h('thead', {}, h('tr', {}, ['#', 'tool', 'arguments', 'runtime'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, calls.map((c, i) => {
        const r = recorded[i];
        const flags = r ? [str(r.status), r.deduplicated ? 'deduplicated' : '', r.duplicate ? 'duplicate' : '', r.charged ? 'charged' : '', r.last_allowed ? 'last allowed' : ''].filter(Boolean).join(', ') : '';
        return h('tr', {}, h('td', { text: String(i + 1) }), h('td', {}, h('code', { text: str(c.name) })),
          h('td', {}, h('code.args', { text: str(c.arguments) })), h('td', { text: flags }));
      }))),
    h('p.usage', { text: `Usage: ${tokens(usage.input_tokens)} input tokens, ${tokens(usage.output_tokens)} output tokens, ` +
      `cache read ${tokens(usage.cache_read_tokens)}, cache written ${tokens(usage.cache_write_tokens)} · cost ${dollars(row.cost)} · ` +
      `first token ${ms(latency.first_token_us)}, total ${ms(latency.total_us)}` }),
    h('h4', { text: 'Request body' }),
    h('pre.body', { tabindex: '0', 'aria-label': 'Request body of the cell', text: request || '(none)' }));
}

/**
 * The tab's controller. `ctx` gives the page's state: `agent()`, `role()`, `refs()` (the ref
 * picker's [value, label] pairs), `ref()` (the chosen ref), `suites()` (the suite files of the
 * loaded version's bundle) and `openSend(cell)`.
 */
export function createEvals(ctx) {
  const s = {
    agent: null, runs: [], next: null, runId: null, run: null, cellIndex: null, visible: false, timer: null, gen: 0,
  };
  const canEdit = () => ctx.role() === 'admin' || ctx.role() === 'editor';
  const live = (g) => g === s.gen && s.visible;
  const note = (id, text, isError = false) => {
    const el = fill(id, text);
    el.classList.toggle('error', isError);
  };

  function setPolling(on) {
    $('panel-evals').dataset.polling = String(on);
  }

  function stop() {
    clearTimeout(s.timer);
    s.timer = null;
    setPolling(false);
  }

  /** Polls again while a run of the list, or the open run, is queued or running. */
  function schedule() {
    stop();
    if (!s.visible || !(isActive(s.run) || s.runs.some(isActive))) return;
    setPolling(true);
    const g = s.gen;
    s.timer = setTimeout(() => {
      if (!live(g)) return;
      // A failed read is shown and read again at the next tick: a blip does not end the polling.
      tick(g).then(() => note('eval-runs-status', ''), (e) => { if (live(g)) note('eval-runs-status', problemLines(e).join('\n'), true); })
        .finally(() => { if (live(g)) schedule(); });
    }, POLL_MS);
  }

  async function tick(g) {
    $('panel-evals').dataset.polls = String(Number($('panel-evals').dataset.polls ?? 0) + 1);
    const jobs = [];
    if (s.runs.some(isActive)) jobs.push(loadRuns(false, g));
    if (s.runId && isActive(s.run)) jobs.push(loadRun(s.runId, g));
    await Promise.all(jobs);
  }

  function fillForms() {
    const refs = ctx.refs();
    const keep = (id, fallback) => {
      const el = $(id);
      const value = refs.some(([v]) => v === el.value) ? el.value : fallback;
      el.replaceChildren(...refs.map(([v, label]) => h('option', { value: v, selected: v === value }, label ?? v)));
    };
    const current = ctx.ref();
    keep('eval-baseline', current);
    const hasProduction = refs.some(([v]) => v === 'production');
    keep('eval-base', hasProduction ? 'production' : refs[0]?.[0]);
    keep('eval-candidate', refs.find(([v]) => v !== $('eval-base').value)?.[0] ?? current);
    fillMoreRefs();
    const suites = ctx.suites();
    const suite = $('eval-suite');
    const chosen = suites.includes(suite.value) ? suite.value : suites[0];
    suite.replaceChildren(...suites.map((p) => h('option', { value: p, selected: p === chosen }, p)));
    const allowed = canEdit();
    $('eval-start-fields').disabled = !allowed;
    fill('eval-start-why', allowed
      ? (suites.length ? 'The first ref is the baseline; the suite is read from its version\'s bundle.' : 'The loaded version\'s bundle has no eval suites.')
      : `Starting or cancelling a run needs an editor or admin key; this key is ${ctx.role() ?? 'not known'}.`);
  }

  /** The other refs a run may add after the baseline, as checkboxes (the baseline left out). */
  function fillMoreRefs() {
    const baseline = $('eval-baseline').value;
    const checked = new Set([...document.querySelectorAll('#eval-more-refs input:checked')].map((i) => i.value));
    fill('eval-more-refs-list', ctx.refs().filter(([v]) => v !== baseline).map(([v, label], i) => h('label.check', {},
      h('input', { type: 'checkbox', value: v, id: `eval-ref-${i}`, checked: checked.has(v) }), ` ${label ?? v}`)));
  }

  async function loadRuns(more, g) {
    const answer = await api.evalRuns(s.agent, { limit: PAGE, after: more ? s.next : undefined });
    if (!live(g)) return;
    const items = list(answer?.items);
    if (more) {
      const seen = new Set(s.runs.map((r) => r.id));
      s.runs = [...s.runs, ...items.filter((r) => !seen.has(r.id))];
      s.next = answer?.next ?? null;
    } else {
      // The first page again: newer runs and fresher states first, the pages read after it kept.
      const fresh = new Set(items.map((r) => r.id));
      const tail = s.runs.filter((r) => !fresh.has(r.id));
      s.runs = [...items, ...tail];
      if (!tail.length) s.next = answer?.next ?? null;
    }
    renderRuns();
  }

  /**
   * Replaces the content of `id` with `children`, keeping the keyboard focus on the same control (a
   * run, a repetition, the cancel button) when it was inside, since polling redraws it.
   */
  function refill(id, ...children) {
    const active = document.activeElement;
    const inside = active && $(id).contains(active);
    const key = inside ? (active.dataset.index ?? active.closest('[data-run]')?.dataset.run ?? active.id) : null;
    fill(id, ...children);
    if (!key) return;
    const again = $(id).querySelector(`[data-index="${CSS.escape(key)}"]`)
      ?? $(id).querySelector(`[data-run="${CSS.escape(key)}"] button`)
      ?? (active.id ? document.getElementById(active.id) : null);
    again?.focus();
  }

  function renderRuns() {
    refill('eval-runs', runsView(s.runs, s.runId, (id) => openRun(id)),
      s.next ? h('button', { type: 'button', id: 'eval-more-runs', onclick: () => loadRuns(true, s.gen).then(schedule).catch(showListError) }, 'Older runs') : null);
  }

  const showListError = (e) => note('eval-runs-status', problemLines(e).join('\n'), true);

  async function loadRun(id, g) {
    const run = await api.evalRun(s.agent, id);
    if (!live(g) || s.runId !== id) return;
    s.run = run;
    const i = s.runs.findIndex((r) => r.id === id);
    if (i >= 0) {
      const { results: _r, statistics: _s, ...view } = run;
      s.runs[i] = view;
      renderRuns();
    }
    renderRun();
  }

  function renderRun() {
    const run = s.run;
    if (!run) { fill('eval-run'); return; }
    refill('eval-run', runHeader(run, canEdit(), cancel),
      h('div.matrices', {}, matrixView(run, s.cellIndex, openCell)),
      run.statistics ? null : h('p', { text: 'No cell has completed yet.' }));
  }

  async function openRun(id) {
    s.runId = id;
    s.run = null;
    s.cellIndex = null;
    fill('eval-cell');
    renderRuns();
    fill('eval-run', h('p', { text: 'Loading the run…' }));
    const g = s.gen;
    try {
      await loadRun(id, g);
      if (live(g)) $('eval-run-heading')?.focus();
    } catch (e) {
      if (live(g)) fill('eval-run', h('p.view-error', { role: 'alert', text: problemLines(e).join('\n') }));
    }
    if (live(g)) schedule();
  }

  async function openCell(index) {
    s.cellIndex = index;
    renderRun();
    const g = s.gen;
    const runId = s.runId;
    fill('eval-cell', h('p', { text: 'Loading the cell…' }));
    try {
      const cell = await api.evalCell(s.agent, runId, index);
      if (!live(g) || s.runId !== runId || s.cellIndex !== index) return;
      fill('eval-cell', cellView(cell, (c) => ctx.openSend({ version: c.version ?? c.row?.version_id, send: c.send, target: c.target })));
      $('eval-cell-heading')?.focus();
    } catch (e) {
      if (live(g)) fill('eval-cell', h('p.view-error', { role: 'alert', text: problemLines(e).join('\n') }));
    }
  }

  async function cancel() {
    const runId = s.runId;
    const g = s.gen;
    try {
      const view = await api.cancelEvalRun(s.agent, runId);
      if (!live(g) || s.runId !== runId) return;
      s.run = { ...s.run, ...view };
      renderRun();
      await loadRun(runId, g);
      await loadRuns(false, g);
    } catch (e) {
      if (live(g)) note('eval-runs-status', problemLines(e).join('\n'), true);
    }
    if (live(g)) schedule();
  }

  async function start(event) {
    event.preventDefault();
    if (!canEdit()) return;
    const body = { suite: $('eval-suite').value, refs: [$('eval-baseline').value, ...[...document.querySelectorAll('#eval-more-refs input:checked')].map((i) => i.value)] };
    const models = split($('eval-models').value);
    const scenarios = split($('eval-scenarios').value);
    const repeats = $('eval-repeats').value.trim();
    if (models.length) body.models = models;
    if (scenarios.length) body.scenarios = scenarios;
    if (repeats) {
      const n = Number(repeats);
      if (!Number.isInteger(n) || n < 1) { note('eval-start-status', 'Repeats must be a whole number of at least 1.', true); return; }
      body.repeats = n;
    }
    if (!body.suite) { note('eval-start-status', 'Choose a suite.', true); return; }
    const g = s.gen;
    note('eval-start-status', 'Starting…');
    try {
      const run = await api.startEvalRun(s.agent, body);
      if (!live(g)) return;
      note('eval-start-status', `Started run ${str(run.id)} (${progressText(run)}).`);
      s.runs = [run, ...s.runs.filter((r) => r.id !== run.id)];
      await openRun(run.id);
    } catch (e) {
      if (live(g)) note('eval-start-status', problemLines(e).join('\n'), true);
    }
  }

  async function compare(event) {
    event.preventDefault();
    const g = s.gen;
    fill('eval-compare', h('p', { text: 'Comparing…' }));
    try {
      const answer = await api.compareEvals(s.agent, {
        base: $('eval-base').value, candidate: $('eval-candidate').value,
        suite: $('eval-compare-suite').value.trim(), model: $('eval-compare-model').value.trim(),
      });
      if (live(g)) fill('eval-compare', compareView(answer));
    } catch (e) {
      if (live(g)) fill('eval-compare', h('p.view-error', { role: 'alert', text: problemLines(e).join('\n') }));
    }
  }

  /** Shows the tab: reads the runs again (and the open run), then polls while something goes. */
  async function show() {
    s.visible = true;
    const g = ++s.gen;
    if (s.agent !== ctx.agent()) reset();
    fillForms();
    note('eval-runs-status', '');
    if (!s.agent) return;
    try {
      await loadRuns(false, g);
      if (s.runId && live(g)) await loadRun(s.runId, g);
    } catch (e) {
      if (live(g)) showListError(e);
    }
    if (live(g)) schedule();
  }

  /** Leaves the tab: polling stops and answers still in flight are dropped. */
  function hide() {
    s.visible = false;
    s.gen++;
    stop();
  }

  function reset() {
    s.agent = ctx.agent();
    s.runs = [];
    s.next = null;
    s.runId = null;
    s.run = null;
    s.cellIndex = null;
    fill('eval-runs');
    fill('eval-run');
    fill('eval-cell');
    fill('eval-compare');
    note('eval-start-status', '');
  }

  /** The page picked another agent, or the refs or the bundle changed. */
  function changed() {
    if (s.visible) show();
    else if (s.agent !== ctx.agent()) { s.gen++; reset(); }
  }

  $('eval-start').addEventListener('submit', start);
  $('eval-compare-form').addEventListener('submit', compare);
  $('eval-baseline').addEventListener('change', fillMoreRefs);
  $('eval-refresh').addEventListener('click', () => { if (s.visible) show(); });
  document.addEventListener('visibilitychange', () => {
    if (!s.visible) return;
    if (document.hidden) { s.gen++; stop(); } else show();
  });

  return { show, hide, changed };
}
