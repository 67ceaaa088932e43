// The inspector's Evals tab in a real browser: `promptstack serve --examples` with its suites'
// `local` model pointed (`--eval-model-url`) at a scripted OpenAI Chat Completions server written
// here, keys from `promptstack keys create`, Debian's chromium driven headless by playwright-core
// and axe-core on the tab. The runs stay small: one suite, two scenarios, one repetition.
//
// The scripted model searches first when the request offers a `search` tool, then answers; the
// answer cites its sources ("[1]", "[2]") only when the system prompt carries the chat
// assistant's citation instruction, and it always carries an HTML tag, as an attacker's output
// would, which the page must show as text.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import * as support from './support.mjs';

const AGENT = 'chat-assistant';
const SUITE = 'evals/citations.toml';
const SCENARIOS = ['research-cites-sources', 'three-sources-cited-twice'];
/** The chat assistant's citation instruction, which the worse version leaves out. */
const CITE = 'When an answer relies on a tool result that carries a source number, cite it inline as [N] right after the claim it supports.';
const HOSTILE = '<img src=x onerror="window.__pwned=1">';

let data;
let server;
let model;
let base;
let browser;
let page;
let keys;
const versions = { production: null, worse: null };
/** The first run: production and the worse version, finished before the page opens it. */
let run;
/** Milliseconds the scripted model waits before answering (the test slows it down to watch a run go). */
let modelDelay = 0;
let modelRequests = 0;

/** The scripted model's answer to one Chat Completions request, as SSE. */
function answer(request) {
  const messages = Array.isArray(request?.messages) ? request.messages : [];
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => JSON.stringify(m.content)).join('\n');
  const hasResult = messages.some((m) => m.role === 'tool');
  const offersSearch = (request?.tools ?? []).some((t) => t?.function?.name === 'search');
  const chunk = (delta, finish = null) => ({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] });
  const chunks = [];
  if (offersSearch && !hasResult) {
    chunks.push(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'search', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query":"the question"}' } }] }),
      chunk({}, 'tool_calls'));
  } else {
    const cites = system.includes('cite it inline as [N]');
    const text = `From the sources${cites ? ' [1]' : ''}: Rust 1.95 is out, and the tower was finished in 1889${cites ? ' [2]' : ''}. ${HOSTILE}`;
    chunks.push(chunk({ role: 'assistant', content: '' }));
    for (const piece of text.match(/.{1,24}/gs)) chunks.push(chunk({ content: piece }));
    chunks.push(chunk({}, 'stop'));
  }
  chunks.push({ id: 'c1', choices: [], usage: { prompt_tokens: 400, completion_tokens: 30, total_tokens: 430 } });
  return `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`;
}

function startModel() {
  const srv = http.createServer((req, res) => {
    const body = [];
    let size = 0;
    req.on('data', (c) => { size += c.length; if (size <= 8 << 20) body.push(c); });
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end('{"error":{"message":"not found"}}');
        return;
      }
      modelRequests += 1;
      let request = null;
      try { request = JSON.parse(Buffer.concat(body).toString('utf8')); } catch { /* answered as a plain question */ }
      if (modelDelay) await new Promise((r) => setTimeout(r, modelDelay));
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      res.end(answer(request));
    });
  });
  return new Promise((ok) => srv.listen(0, '127.0.0.1', () => ok(srv)));
}

/** The API from the test itself (not through the page). */
const apiCall = support.api(() => base);

const evalsPath = `/v1/agents/${AGENT}/evals`;

/** Waits until the run is no longer queued or running; its detail. */
async function finished(id, deadline = Date.now() + 120_000) {
  for (;;) {
    const { json } = await apiCall('GET', `${evalsPath}/${id}`, keys.viewer);
    if (!['queued', 'running'].includes(json.state)) return json;
    if (Date.now() > deadline) throw new Error(`run ${id} still ${json.state}: ${JSON.stringify(json.progress)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  model = await startModel();
  ({ server, base, data, keys } = await support.startServer('inspector-evals',
    ['--eval-workers', '2', '--eval-model-url', `local=http://127.0.0.1:${model.address().port}/v1`]));

  // A worse version of the chat assistant: its citation instruction removed. Publishing moves
  // no label, so `production` stays on the example's version.
  const { json: labels } = await apiCall('GET', `/v1/agents/${AGENT}/labels`, keys.admin);
  versions.production = (labels.items ?? labels).find((l) => l.name === 'production').version;
  const { json: stored } = await apiCall('GET', `/v1/agents/${AGENT}/versions/${versions.production}`, keys.admin);
  const bundle = structuredClone(stored.bundle);
  assert.ok(bundle.spec.includes(CITE), 'the spec carries the citation instruction');
  bundle.spec = bundle.spec.replace(CITE, 'When an answer relies on a tool result, say so.');
  const { json: published } = await apiCall('POST', `/v1/agents/${AGENT}/versions`, keys.admin, bundle);
  versions.worse = published.version.id;

  // One run of both versions through the API, finished before the page opens it.
  const started = await apiCall('POST', evalsPath, keys.admin,
    { suite: SUITE, refs: ['production', versions.worse], models: ['local'], scenarios: SCENARIOS, repeats: 1 }, 201);
  assert.equal(started.headers.get('location'), `${evalsPath}/${started.json.id}`);
  assert.equal(started.json.progress.total, 4);
  run = await finished(started.json.id);
  assert.equal(run.state, 'done', JSON.stringify(run));
  assert.equal(run.results.length, 4);

  ({ browser, page } = await support.openPage());
});

after(async () => {
  await support.stopAll({ browser, server, data });
  model?.close();
});

const shot = (name) => support.shot(page, name);
const accessible = (what) => support.accessible(page, what);

async function login(key) {
  await page.goto(`${base}/`);
  await page.fill('#key', key);
  await page.click('#key-form button[type=submit]');
  await page.waitForFunction(() => document.body.dataset.connecting === 'false' && Number(document.body.dataset.renders ?? 0) > 0);
  assert.equal(await page.inputValue('#agent'), AGENT);
}

/** Opens the Evals tab and the run `id` in it; resolves once its matrix is drawn. */
async function openRun(id) {
  await page.click('#tab-evals');
  await page.waitForSelector(`#eval-runs tr.run[data-run="${id}"]`);
  await page.click(`#eval-runs tr.run[data-run="${id}"] button`);
  await page.waitForSelector('#eval-run table.matrix');
}

const mark = (version, scenario) => {
  const vi = run.refs.findIndex((r) => r.version === version);
  const si = run.scenarios.indexOf(scenario);
  return `#eval-run button.mark[data-index="${(vi * run.models.length * run.scenarios.length + si) * run.repeats}"]`;
};

test('the matrix of a finished run shows every cell with its result and the progress', async () => {
  await login(keys.admin);
  await openRun(run.id);
  assert.match(await page.textContent('#eval-progress-text'), /^4 of 4 cells done · \d+ failed · done/);
  assert.equal(await page.locator('#eval-run .mark-pending').count(), 0);
  assert.equal(await page.locator('#eval-run button.mark').count(), 4);
  for (const r of run.results) {
    const symbol = r.error ? '!' : r.passed ? '✓' : '✗';
    const cell = page.locator(`#eval-run button.mark[data-index="${r.index}"]`);
    assert.equal((await cell.textContent()).trim(), symbol, `cell ${r.index}`);
    assert.match(await cell.getAttribute('aria-label'), new RegExp(`^${r.scenario}, .*, local, repetition 1: (passed|failed|error)$`));
  }
  // The citation instruction makes the difference on the scenario that only needs one citation.
  const passed = (version) => run.results.find((r) => r.version === version && r.scenario === SCENARIOS[0]).passed;
  assert.equal(passed(versions.production), true, JSON.stringify(run.results));
  assert.equal(passed(versions.worse), false, JSON.stringify(run.results));
  assert.equal(await page.locator('#eval-cancel').count(), 0, 'a finished run cannot be cancelled');
  await shot('evals-matrix');
  await accessible('evals tab with a run');
});

test('a cell drill-down shows the request, the answer as text, the tool calls and each assertion', async () => {
  await page.click(mark(versions.production, SCENARIOS[0]));
  await page.waitForSelector('#eval-cell table.assertions tbody tr');
  const assertions = await page.$$eval('#eval-cell table.assertions tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const citations = assertions.find(([, kind]) => kind === 'citations');
  assert.ok(citations, JSON.stringify(assertions));
  assert.equal(citations[2], 'passed');
  assert.ok(citations[3].length > 5, 'the verdict has its reason');
  const answerText = await page.textContent('#eval-cell pre.answer');
  assert.match(answerText, /Rust 1\.95 is out/);
  // The model's HTML is text in the page, never markup.
  assert.ok(answerText.includes('onerror'), answerText);
  assert.equal(await page.locator('#eval-cell img').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.match(await page.textContent('#eval-cell table.tool-calls'), /search/);
  assert.match(await page.textContent('#eval-cell pre.body'), /"messages"/);
  assert.match(await page.textContent('#eval-cell p.usage'), /input tokens/);
  await shot('evals-cell');
  await accessible('evals tab with a drill-down');
});

test('the drill-down opens the same send in the other tabs', async () => {
  const index = Number(await page.getAttribute(mark(versions.production, SCENARIOS[0]), 'data-index'));
  const { json: cell } = await apiCall('GET', `${evalsPath}/${run.id}/cells/${index}`, keys.viewer);
  const n = await page.evaluate(() => Number(document.body.dataset.renders ?? 0));
  await page.click('#eval-open-send');
  await page.waitForFunction((k) => Number(document.body.dataset.renders ?? 0) > k, n);
  assert.equal(await page.getAttribute('#tab-blocks', 'aria-selected'), 'true');
  assert.equal(await page.inputValue('#ref'), cell.version);
  assert.equal(await page.inputValue('#target'), cell.target);
  assert.deepEqual(JSON.parse(await page.inputValue('#send')), cell.send);
  await page.waitForSelector('table.blocks tr.block');
  assert.match(await page.textContent('#status'), new RegExp(`^${AGENT} · version ${cell.version.slice(0, 12)}`));
  await page.click('#tab-request');
  await page.waitForSelector('#request pre.body');
  await shot('evals-opened-send');
});

test('two versions side by side: an SVG with its text, the difference and the verdict in words', async () => {
  await page.click('#tab-evals');
  await page.selectOption('#eval-base', 'production');
  await page.selectOption('#eval-candidate', versions.worse);
  await page.fill('#eval-compare-suite', SUITE);
  await page.fill('#eval-compare-model', 'local');
  await page.click('#eval-compare-button');
  await page.waitForSelector('#eval-compare svg.evalchart');
  const { json: compared } = await apiCall('GET',
    `${evalsPath}/compare?base=production&candidate=${versions.worse}&suite=${encodeURIComponent(SUITE)}&model=local`, keys.viewer);
  assert.equal(compared.candidate.version, versions.worse);
  assert.equal(await page.getAttribute('#eval-compare svg', 'role'), 'img');
  const title = await page.textContent('#eval-compare svg > title');
  const desc = await page.textContent('#eval-compare svg > desc');
  assert.match(title, /Pass rates of production/);
  assert.match(desc, /base production .*mean pass rate/);
  assert.match(desc, /candidate − base: /);
  // Every version's mean pass rate is in the text alternative and in the words under the chart.
  for (const s of compared.summaries) {
    const rate = `${(s.mean_pass_rate * 100).toFixed(1)} %`;
    assert.ok(desc.includes(rate), `${rate} in ${desc}`);
    assert.ok((await page.textContent('#eval-compare .compare-text')).includes(rate));
  }
  // The worse version passes fewer scenarios: the difference, candidate − base, is negative.
  const outcome = compared.comparison?.outcome;
  assert.equal(outcome?.status, 'compared', JSON.stringify(compared));
  assert.match(desc, /candidate − base: −\d+\.\d points/);
  const verdict = await page.textContent('#eval-compare .verdict');
  const words = { no_difference_shown: /No difference shown/, favours: /favour the base/, too_few_scenarios: /Too few shared scenarios/ };
  assert.match(verdict, words[outcome.verdict.verdict], verdict);
  if (compared.gate) assert.match(await page.textContent('#eval-compare .gate'), compared.gate.passes ? /Gate passes/ : /Gate fails/);
  await shot('evals-compare');
  await accessible('evals comparison');
});

test('a run started from the form is polled while it goes, not while the tab is left, and can be cancelled', async () => {
  modelDelay = 6000;
  try {
    await page.selectOption('#eval-suite', SUITE);
    await page.selectOption('#eval-baseline', 'production');
    await page.fill('#eval-models', 'local');
    await page.fill('#eval-scenarios', SCENARIOS.join(', '));
    await page.fill('#eval-repeats', '1');
    await page.click('#eval-start-button');
    await page.waitForFunction(() => /^Started run /.test(document.getElementById('eval-start-status').textContent));
    await page.waitForSelector('#eval-run table.matrix');
    const id = await page.$eval('#eval-run-heading code', (c) => c.textContent);
    assert.notEqual(id, run.id);
    assert.match(await page.textContent('#eval-progress-text'), /^\d of 2 cells done/);
    await page.waitForSelector('#panel-evals[data-polling=true]', { state: 'attached' });
    assert.equal(await page.locator('#eval-cancel').count(), 1, 'an admin may cancel a running run');
    // The page reads the run again while it goes, and the redraw keeps the keyboard focus.
    await page.focus('#eval-cancel');
    const polls = await page.evaluate(() => Number(document.getElementById('panel-evals').dataset.polls ?? 0));
    await page.waitForFunction((p) => Number(document.getElementById('panel-evals').dataset.polls ?? 0) > p, polls);
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'eval-cancel');
    await shot('evals-running');
    // Leaving the tab stops the polling; coming back starts it again.
    await page.click('#tab-blocks');
    assert.equal(await page.getAttribute('#panel-evals', 'data-polling'), 'false');
    const left = await page.evaluate(() => Number(document.getElementById('panel-evals').dataset.polls ?? 0));
    await page.waitForTimeout(2500);
    assert.equal(await page.evaluate(() => Number(document.getElementById('panel-evals').dataset.polls ?? 0)), left, 'no polling outside the tab');
    await page.click('#tab-evals');
    await page.waitForSelector('#eval-cancel');
    await page.click('#eval-cancel');
    await page.waitForFunction(() => /cancelled/.test(document.querySelector('#eval-run-heading .badge')?.textContent ?? ''));
    await page.waitForSelector('#panel-evals[data-polling=false]', { state: 'attached' });
    assert.equal(await page.locator('#eval-cancel').count(), 0);
    const { json: cancelled } = await apiCall('GET', `${evalsPath}/${id}`, keys.viewer);
    assert.equal(cancelled.state, 'cancelled');
    await accessible('evals tab with a cancelled run');
  } finally {
    modelDelay = 0;
  }
});

test('a viewer sees the runs but cannot start or cancel one', async () => {
  await login(keys.viewer);
  await openRun(run.id);
  assert.equal(await page.$eval('#eval-start-fields', (f) => f.disabled), true);
  assert.equal(await page.isDisabled('#eval-start-button'), true);
  assert.match(await page.textContent('#eval-start-why'), /editor or admin/);
  assert.equal(await page.locator('#eval-cancel').count(), 0);
  // The server refuses the start too, whatever the page does.
  await apiCall('POST', evalsPath, keys.viewer, { suite: SUITE, refs: ['production'], scenarios: [SCENARIOS[0]], repeats: 1 }, 403);
  await shot('evals-viewer');
  await accessible('evals tab for a viewer');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot('evals-viewer-dark');
  await accessible('evals tab for a viewer, dark');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.ok(modelRequests > 0, 'the runs called the scripted model');
});
