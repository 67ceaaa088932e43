// The inspector's state and wiring: pickers, the send editor, live re-rendering and the views.

import { api, key, problemLines } from './api.js';
import { h, fill } from './dom.js';
import { parseWithLines, validate, lineOf, JsonError } from './jsonloc.js';
import { blocksView, blockDetail, textView, requestView, toolsView, diffView, reasonText } from './views.js';
import { cacheChartSvg } from './chart.js';
import { createEvals } from './evals.js';

const DEBOUNCE_MS = 120;
const $ = (id) => document.getElementById(id);

const state = {
  role: null, agents: [], agent: null, refs: [], bundle: null, sends: {}, schema: null,
  send: null, explain: null, selected: null, view: 'blocks', overrides: {}, generation: 0,
  stored: null, saveNote: null, connection: 0, pick: 0, refOptions: [], openedSend: null,
};
/** Edit-to-render round trips (ms) of the live re-render, for the browser test. */
window.inspectorTimings = [];

const status = (text, isError = false) => {
  const el = $('status');
  el.textContent = text;
  el.classList.toggle('error', isError);
};
const showError = (e) => status(problemLines(e).join('\n'), true);

function options(select, items, chosen) {
  select.replaceChildren(...items.map(([value, label]) => h('option', { value, selected: value === chosen }, label ?? value)));
}

const listOf = (answer, ...keys) => {
  if (Array.isArray(answer)) return answer;
  for (const k of keys) if (Array.isArray(answer?.[k])) return answer[k];
  return [];
};

/**
 * Connects with the key in the form: who it is, the agents, the send schema, then the first agent
 * and its first render. A later connect (a key submitted while the remembered one is still
 * connecting) supersedes an earlier one, which stops at its next step. `data-connecting` on the
 * body is `true` from the start of the latest connect until it has rendered or failed.
 */
async function connect() {
  const attempt = ++state.connection;
  const current = () => attempt === state.connection;
  document.body.dataset.connecting = 'true';
  try {
    const me = await api.me().catch(() => null);
    if (!current()) return;
    state.role = me?.role ?? null;
    fill('whoami', me ? `tenant ${me.tenant} · ${me.role}` : '');
    const agents = listOf(await api.agents(), 'agents', 'items');
    if (!current()) return;
    state.agents = agents.map((a) => (typeof a === 'string' ? a : a.name));
    options($('agent'), state.agents.map((a) => [a]), state.agents.includes('chat-assistant') ? 'chat-assistant' : state.agents[0]);
    const [schema, formats] = await Promise.all(
      ['/inspector/send.schema.json', '/inspector/formats.json'].map((path) => fetch(path).then((r) => r.json())),
    );
    if (!current()) return;
    state.schema = schema;
    // The engine's provider formats, the first chosen; filled once, so a reconnect keeps the choice.
    for (const id of ['format', 'sim-provider']) {
      if ($(id).options.length === 0) options($(id), formats.map((f) => [f]), formats[0]);
    }
    document.body.classList.add('connected');
    await pickAgent();
  } catch (e) {
    if (current()) showError(e);
  } finally {
    if (current()) document.body.dataset.connecting = 'false';
  }
}

/**
 * Loads the chosen agent and renders its first send. Picking an agent or a version while an
 * earlier pick is still loading supersedes it: the earlier one stops at its next step, so what
 * arrives late never overwrites the later choice.
 */
async function pickAgent() {
  const pick = ++state.pick;
  state.agent = $('agent').value;
  state.selected = null;
  state.overrides = {};
  state.saveNote = null;
  fill('copy-status');
  fill('copy-warnings');
  const [versions, labels, stored] = await Promise.all([
    api.versions(state.agent).then((a) => listOf(a, 'versions', 'items')),
    api.labels(state.agent).then((a) => listOf(a, 'labels', 'items')).catch(() => []),
    api.settings(state.agent).catch(() => null),
  ]);
  if (pick !== state.pick) return;
  state.stored = stored;
  state.labels = new Map(labels.map((l) => [l.name, l.version]));
  const refs = labels.map((l) => [l.name, `label ${l.name} (${String(l.version).slice(0, 12)}…)`]);
  for (const v of versions) refs.push([v.id, `version ${v.id.slice(0, 12)}… (${v.created_at ?? ''})`]);
  if (!refs.length) refs.push(['production', 'label production']);
  state.refOptions = refs;
  options($('ref'), refs, state.labels.has('production') ? 'production' : refs[0][0]);
  options($('ref-b'), refs, refs[refs.length - 1][0]);
  await pickRef();
}

/** The send-name option that stands for a send opened from an eval cell. */
const OPENED = '\u0000opened';

/**
 * Loads the chosen version's bundle and renders a send: the bundle's preferred example send, or
 * `opened` (`{send, target}`, a send opened from the Evals tab) in the editor with its target.
 */
async function pickRef(opened = null) {
  const pick = ++state.pick;
  const ref = $('ref').value;
  const versionId = state.labels?.get(ref) ?? ref;
  const stored = await api.version(state.agent, versionId).catch(() => null);
  if (pick !== state.pick) return;
  state.bundle = stored?.bundle ?? null;
  state.sends = state.bundle?.sends ?? {};
  state.openedSend = opened?.send ?? null;
  const names = Object.keys(state.sends);
  const preferred = names.includes('research') ? 'research' : names.includes('default') ? 'default' : names[0];
  const sendOptions = names.map((n) => [n]);
  if (opened) sendOptions.unshift([OPENED, 'the send of an eval cell']);
  options($('send-name'), sendOptions, opened ? OPENED : preferred);
  options($('send-b'), names.map((n) => [n]), names.find((n) => n !== preferred) ?? preferred);
  evals.changed();
  if (opened?.target) options($('target'), [[opened.target]], opened.target);
  await loadSend();
}

/**
 * Opens a send of an eval run in the other tabs: its version as the ref (added to the picker when
 * the version list does not hold it), its send in the editor and its target chosen, in Blocks.
 */
async function openSend({ version, send, target }) {
  if (!version || !send) return;
  const ref = $('ref');
  if (![...ref.options].some((o) => o.value === version)) {
    ref.append(h('option', { value: version }, `version ${String(version).slice(0, 12)}… (from an eval run)`));
  }
  ref.value = version;
  selectTab('blocks');
  $('tab-blocks').focus();
  await pickRef({ send, target });
}

const evals = createEvals({
  agent: () => state.agent,
  role: () => state.role,
  refs: () => state.refOptions,
  ref: () => $('ref').value,
  suites: () => Object.keys(state.bundle?.files ?? {}).filter((p) => /^evals\/[^/]+\.(toml|json)$/.test(p)).sort(),
  openSend: (cell) => openSend(cell).catch(showError),
});

let timer = null;

/** Puts the chosen send in the editor and renders it (now, not after the typing pause). */
function loadSend() {
  const name = $('send-name').value;
  const send = (name === OPENED ? state.openedSend : state.sends[name]) ?? {};
  $('send').value = JSON.stringify(send, null, 2);
  state.explain = null;
  clearTimeout(timer);
  return render();
}

/** Validates the editor's JSON against the send schema; shows every error at its line. */
function checkSend() {
  const text = $('send').value;
  let parsed;
  try {
    parsed = parseWithLines(text);
  } catch (e) {
    if (!(e instanceof JsonError)) throw e;
    showSendErrors([{ line: e.line, message: `${e.message} (column ${e.column})` }]);
    return null;
  }
  const errors = state.schema ? validate(state.schema, parsed.value) : [];
  showSendErrors(errors.map((err) => ({ line: lineOf(parsed.lines, err.pointer), message: `${err.pointer || '/'}: ${err.message}` })));
  return errors.length ? null : parsed.value;
}

function showSendErrors(errors) {
  const lines = $('send').value.split('\n').length;
  const bad = new Set(errors.map((e) => e.line));
  $('gutter').textContent = Array.from({ length: lines }, (_, i) => `${bad.has(i + 1) ? '▶' : ' '}${i + 1}`).join('\n');
  $('send').setAttribute('aria-invalid', String(errors.length > 0));
  fill('send-errors', errors.map((e) => h('li', {}, h('button.link', { type: 'button', onclick: () => gotoLine(e.line) }, `line ${e.line}`), `: ${e.message}`)));
}

function gotoLine(line) {
  const ta = $('send');
  const lines = ta.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  ta.focus();
  ta.setSelectionRange(start, start + lines[line - 1].length);
}

function onEdit(now = false) {
  clearTimeout(timer);
  timer = setTimeout(render, now ? 0 : DEBOUNCE_MS);
}

/** The overrides in force without a preview: the agent's stored settings, else the send's. */
const storedOverrides = () => state.stored?.document?.auto_injections ?? state.send?.auto_injections ?? {};

/**
 * The agent settings the toggles stand for: the overrides in force with each toggle applied, or
 * null when nothing is toggled. The server renders them in place of the stored settings without
 * storing them (the `settings` of a render-like request); Save writes exactly this document.
 */
function previewSettings() {
  if (!Object.keys(state.overrides).length) return null;
  const base = structuredClone(storedOverrides());
  base.capabilities = { ...(base.capabilities ?? {}) };
  for (const [slug, o] of Object.entries(state.overrides)) {
    if (o.mode === 'default') delete base.capabilities[slug];
    else base.capabilities[slug] = { ...(base.capabilities[slug] ?? {}), ...o };
  }
  return { auto_injections: base };
}

const common = () => {
  const settings = previewSettings();
  return { ref: $('ref').value, send: state.send, ...(settings ? { settings } : {}) };
};

async function render() {
  const send = checkSend();
  if (!send || !state.agent) return;
  state.send = send;
  const generation = ++state.generation;
  const started = performance.now();
  try {
    const answer = await api.op(state.agent, 'explain', common());
    if (generation !== state.generation) return;
    state.explain = answer.detail;
    const targets = state.explain.targets.map((t) => t.target);
    const chosen = targets.includes($('target').value) ? $('target').value : targets[0];
    options($('target'), targets.map((t) => [t]), chosen);
    await renderView();
    window.inspectorTimings.push(performance.now() - started);
    document.body.dataset.renders = String(Number(document.body.dataset.renders ?? 0) + 1);
    const diags = answer.diagnostics ?? [];
    document.body.dataset.preview = String(Boolean(answer.preview));
    status(`${answer.agent} · version ${String(answer.version).slice(0, 12)}${answer.label ? ` (${answer.label})` : ''} · fingerprint ${String(answer.fingerprint).slice(0, 16)} · rules ${answer.rules_version}${answer.preview ? ' · preview of unsaved settings' : ''}${diags.length ? ` · ${diags.length} diagnostics` : ''}`);
  } catch (e) {
    if (generation === state.generation) showError(e);
  }
}

/** Where each view that renders on every edit writes, its errors included. */
const VIEW_OUTPUT = { blocks: 'blocks', text: 'text', request: 'request', tools: 'tools', overrides: 'overrides' };

/**
 * A view's failure, shown in that view only: the status line and the other views stay as they are.
 * `hint` says what the reader can do about it.
 */
const viewError = (e, hint) => h('p.view-error', { role: 'alert', text: [...problemLines(e), hint].filter(Boolean).join('\n') });

/**
 * The send of the request view. A send without a user message (a stage before anyone spoke) has
 * nothing to send; the view then takes the sample user message, which the other views never see.
 */
function requestSend() {
  const needsSample = state.send?.user_message == null;
  $('sample-row').hidden = !needsSample;
  const sample = $('sample-message').value.trim();
  return needsSample && sample ? { ...state.send, user_message: sample } : state.send;
}

async function renderView() {
  const target = $('target').value;
  const ex = state.explain;
  if (!ex) return;
  const view = state.view;
  try {
    switch (view) {
      case 'blocks': {
        fill('blocks', blocksView(ex, target, state.selected, (id) => { state.selected = id; renderView(); }));
        fill('block-detail', blockDetail(ex.assembly.blocks.find((b) => b.id === state.selected), state.bundle));
        break;
      }
      case 'text': fill('text', textView(ex, target)); break;
      case 'request': {
        const answer = await api.op(state.agent, 'request', { ...common(), send: requestSend(), target, format: $('format').value });
        fill('request', requestView(answer));
        break;
      }
      case 'tools': fill('tools', toolsView(await api.op(state.agent, 'tools', common()))); break;
      case 'overrides': renderOverrides(); break;
      default: break;
    }
  } catch (e) {
    if (!VIEW_OUTPUT[view]) throw e;
    const noSample = view === 'request' && !$('sample-row').hidden && !$('sample-message').value.trim();
    fill(VIEW_OUTPUT[view], viewError(e, noSample ? 'Enter a sample user message above to see the request.' : null));
  }
}

function renderOverrides() {
  const caps = state.explain.assembly.blocks.filter((b) => b.id.startsWith('capability.'));
  if (!caps.length) { fill('overrides', h('p', { text: 'This agent has no stage capabilities to override.' })); return; }
  const canSave = state.role === 'admin';
  const why = canSave ? null : `Saving needs an admin key; this key is ${state.role ?? 'not an admin key'}. Toggles preview only.`;
  const revision = state.stored?.revision ?? 0;
  const storedNote = revision ? `Stored settings: revision ${revision}, the state a plain render shows.` : 'No stored settings: the send\'s overrides are in force.';
  const rows = caps.map((b) => {
    const slug = b.id.slice('capability.'.length);
    const mode = state.overrides[slug]?.mode ?? (b.override === 'off' || b.override === 'custom' ? b.override : 'default');
    const name = `ov-${slug}`;
    return h('fieldset.override', {},
      h('legend', {}, h('code', { text: slug }), ` — now ${b.state.state}${b.state.state === 'included' ? '' : ` (${reasonText(b.state.reason)})`}, override ${b.override}`),
      ['default', 'off', 'custom'].map((m) => h('label', {},
        h('input', { type: 'radio', name, value: m, checked: mode === m, onchange: () => setOverride(slug, m, b.text) }), ` ${m}`)),
      mode === 'custom' ? h('label.block', {}, 'Custom text ',
        h('textarea', { rows: 3, oninput: (e) => { state.overrides[slug] = { mode: 'custom', text: e.target.value }; onEdit(); } },
          state.overrides[slug]?.text ?? b.text)) : null);
  });
  fill('overrides',
    h('p', { text: 'Toggles re-render the page as a preview of unsaved settings, over any stored ones; nothing is stored until you save.' }),
    h('p', { id: 'stored-note', text: storedNote }),
    rows,
    h('div.save', {},
      h('button', { type: 'button', id: 'save-overrides', disabled: !canSave, 'aria-describedby': 'save-why', onclick: saveOverrides }, 'Save overrides for this tenant'),
      h('span', { id: 'save-why', role: 'status', text: why ?? state.saveNote ?? 'Saving writes the agent settings (audited).' })));
}

function setOverride(slug, mode, text) {
  state.saveNote = null;
  state.overrides[slug] = mode === 'custom' ? { mode, text } : { mode };
  onEdit(true);
}

async function saveOverrides() {
  try {
    const document = previewSettings() ?? { auto_injections: storedOverrides() };
    state.stored = await api.saveSettings(state.agent, document, state.stored ? state.stored.revision : undefined);
    state.overrides = {};
    state.saveNote = `Saved (revision ${state.stored.revision}).`;
    onEdit(true);
  } catch (e) {
    fill('save-why', problemLines(e).join(' '));
  }
}

async function copyFull() {
  try {
    const answer = await api.op(state.agent, 'render', { ...common(), target: $('target').value, full: true, format: 'text' });
    const text = answer.text ?? '';
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const ta = h('textarea', {}, text);
      document.body.append(ta);
      ta.select();
      document.execCommand('copy');
      ta.remove();
    }
    $('copied').value = text;
    fill('copy-status', `Copied the full prompt (${text.length} characters).`);
    fill('copy-warnings', (answer.diagnostics ?? []).map((d) => h('li', { text: d.message ?? JSON.stringify(d) })));
  } catch (e) {
    fill('copy-status', problemLines(e).join(' '));
  }
}

async function runDiff() {
  try {
    const bSend = $('diff-mode').value === 'sends' ? (state.sends[$('send-b').value] ?? state.send) : state.send;
    const body = { ...common(), target: $('target').value, format: $('format').value, send_b: bSend };
    if ($('diff-mode').value === 'versions') body.ref_b = $('ref-b').value;
    fill('diff', diffView(await api.op(state.agent, 'diff', body)));
  } catch (e) { fill('diff', h('p.error', { text: problemLines(e).join('\n') })); }
}

let layout = null;
async function runCacheSim() {
  try {
    fill('cache-status', 'Simulating…');
    layout ??= await fetch('/inspector/cache-chart.json').then((r) => r.json());
    const report = await api.cacheSim(state.agent, {
      ref: $('ref').value, target: $('target').value, provider: $('sim-provider').value,
      model: $('sim-model').value || undefined, turns: Number($('sim-turns').value),
      settings: previewSettings() ?? undefined,
    });
    const sim = report.report ?? report.detail ?? report;
    $('cache-chart').innerHTML = cacheChartSvg(sim, layout);
    fill('cache-status', `naive baseline costs ${(sim.naive.relative_cost / Math.max(sim.ours.relative_cost, 1e-9)).toFixed(2)}× ours`);
  } catch (e) { fill('cache-status', problemLines(e).join(' ')); }
}

async function runFence() {
  try {
    const answer = await api.fence({ text: $('fence-in').value, kind: $('fence-kind').value, origin: $('fence-origin').value || undefined });
    $('fence-out').textContent = answer.text;
    fill('fence-note', `${answer.defanged} markers or control tokens defanged${answer.truncated ? `; truncated to ${answer.truncated[0]} of ${answer.truncated[1]} bytes` : ''}.`);
  } catch (e) { $('fence-out').textContent = problemLines(e).join('\n'); }
}

async function runCite() {
  try {
    let sources;
    try { sources = JSON.parse($('cite-sources').value || '{"sources": []}'); } catch (e) { throw new Error(`the sources are not valid JSON: ${e.message}`); }
    $('cite-out').textContent = await api.cite({ sources, mode: $('cite-mode').value }, $('cite-in').value);
  } catch (e) { $('cite-out').textContent = problemLines(e).join('\n'); }
}

function selectTab(name, focus = false) {
  state.view = name;
  for (const tab of document.querySelectorAll('[role=tab]')) {
    const on = tab.dataset.view === name;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    if (on && focus) tab.focus();
    $(tab.getAttribute('aria-controls')).hidden = !on;
  }
  if (name === 'evals') evals.show();
  else evals.hide();
  renderView().catch(showError);
}

function linkHover(event, on) {
  const id = event.target.closest?.('[data-block]')?.dataset.block;
  if (!id) return;
  for (const el of document.querySelectorAll(`#text [data-block="${CSS.escape(id)}"]`)) el.classList.toggle('hl', on);
}

function init() {
  $('key').value = key.get();
  $('key-form').addEventListener('submit', (e) => { e.preventDefault(); key.set($('key').value); connect(); });
  $('agent').addEventListener('change', () => pickAgent().catch(showError));
  $('ref').addEventListener('change', () => pickRef().catch(showError));
  $('send-name').addEventListener('change', loadSend);
  $('target').addEventListener('change', () => renderView().catch(showError));
  $('format').addEventListener('change', () => onEdit(true));
  $('send').addEventListener('input', () => onEdit());
  $('send').addEventListener('scroll', () => { $('gutter').scrollTop = $('send').scrollTop; });
  $('sample-message').addEventListener('input', () => onEdit());
  $('copy').addEventListener('click', copyFull);
  $('run-diff').addEventListener('click', runDiff);
  $('run-sim').addEventListener('click', runCacheSim);
  $('run-fence').addEventListener('click', runFence);
  $('run-cite').addEventListener('click', runCite);
  const tabs = [...document.querySelectorAll('[role=tab]')];
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => selectTab(tab.dataset.view));
    tab.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (step) selectTab(tabs[(i + step + tabs.length) % tabs.length].dataset.view, true);
    });
  });
  for (const [type, on] of [['mouseover', true], ['mouseout', false], ['focusin', true], ['focusout', false]]) {
    $('text').addEventListener(type, (e) => linkHover(e, on));
  }
  selectTab('blocks');
  if (key.get()) connect();
}

init();
