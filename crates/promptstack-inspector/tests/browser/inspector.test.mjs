// The inspector in a real browser: `promptstack serve --examples` on a free port with a temporary
// data directory, keys made with `promptstack keys create`, Debian's chromium driven headless by
// playwright-core, and axe-core's accessibility check on every view. Each test saves a
// screenshot to target/inspector-artifacts/ (kept as CI artifacts, not compared).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as support from './support.mjs';

const { promptstack } = support;

let data;
let server;
let base;
let browser;
let page;
let keys;
/**
 * Two more versions of the chat assistant, published in the setup (no label moves to them): one
 * changes a block of the cached system prefix, the other only a per-send note of the user slot.
 */
const candidate = { block: 'style', id: null };
const noteOnly = { id: null };

before(async () => {
  ({ server, base, data, keys } = await support.startServer('inspector'));
  await publishCandidate();
  let context;
  ({ browser, context, page } = await support.openPage());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
});

after(() => support.stopAll({ browser, server, data }));

/** The API from the test itself (not through the page). */
const apiCall = support.api(() => base);

/**
 * Publishes a second version of the chat assistant through the API: the production bundle with
 * the text of one block in the middle of the stable prefix changed. Publishing moves no label, so
 * `production` stays on the first version.
 */
async function publishCandidate() {
  const { json: versions } = await apiCall('GET', '/v1/agents/chat-assistant/versions', keys.admin);
  const { json: first } = await apiCall('GET', `/v1/agents/chat-assistant/versions/${versions.items[0].id}`, keys.admin);
  const publish = async (before, after) => {
    const bundle = structuredClone(first.bundle);
    assert.ok(bundle.spec.includes(before), `the spec says ${before}`);
    bundle.spec = bundle.spec.replace(before, after);
    const { json: published } = await apiCall('POST', '/v1/agents/chat-assistant/versions', keys.admin, bundle);
    assert.equal(published.created, true);
    return published.version.id;
  };
  candidate.id = await publish('Be warm but brief.', 'Be warm, calm and brief.');
  noteOnly.id = await publish('template = "Current date and time: ', 'template = "The date and time now: ');
}

const shot = (name) => support.shot(page, name);
const accessible = (what) => support.accessible(page, what);

const renders = () => page.evaluate(() => Number(document.body.dataset.renders ?? 0));
async function settled(previous) {
  await page.waitForFunction((n) => Number(document.body.dataset.renders ?? 0) > n, previous);
}

/**
 * Opens the page and connects with `key`. The page may still be connecting with the key an earlier
 * test left in the tab; the submitted key supersedes it, and `data-connecting` turns false only
 * once the submitted key's connect has rendered its first send.
 */
async function login(key) {
  await page.goto(`${base}/`);
  await page.fill('#key', key);
  await page.click('#key-form button[type=submit]');
  await page.waitForFunction(() => document.body.dataset.connecting === 'false' && Number(document.body.dataset.renders ?? 0) > 0);
}

async function choose(selector, value) {
  const n = await renders();
  await page.selectOption(selector, value);
  await settled(n);
}

test('the page loads, takes a key and shows the blocks of the research send', async () => {
  await login(keys.admin);
  await page.selectOption('#agent', 'chat-assistant');
  await page.waitForSelector('#send-name option[value=research]', { state: 'attached' });
  await choose('#send-name', 'research');
  await page.waitForSelector('table.blocks tr.block');
  const rows = await page.locator('table.blocks tr.block').count();
  assert.ok(rows > 5, `${rows} block rows`);
  assert.equal(await page.locator('tr.prefix-line').count(), 1, 'the cacheable-prefix line is drawn');
  await page.locator('tr.block button.link').first().click();
  await page.waitForSelector('#block-detail code.origin');
  assert.match(await page.textContent('#block-detail code.origin'), /agent\.toml:\d+/);
  await shot('blocks');
  await accessible('blocks view');
});

test('excluded blocks show their reasons', async () => {
  const excluded = page.locator('table.blocks tr.block.excluded');
  const n = await excluded.count();
  assert.ok(n > 0, 'the research send excludes some blocks');
  for (let i = 0; i < n; i++) {
    const reason = (await excluded.nth(i).locator('.reason').textContent()).trim();
    assert.ok(reason.length > 3, `row ${i} has the reason ${JSON.stringify(reason)}`);
  }
  const project = page.locator('tr.block.excluded[data-block=project] .reason');
  assert.match(await project.textContent(), /gate/);
  await shot('excluded');
});

test('switching the target changes the text view', async () => {
  await page.click('#tab-text');
  await page.waitForSelector('#text pre.prompt');
  const targets = await page.$$eval('#target option', (os) => os.map((o) => o.value));
  assert.ok(targets.length >= 2, `targets ${targets}`);
  const before = await page.textContent('#text');
  const other = targets.find((t) => t !== (targets.includes('cached') ? 'cached' : targets[0])) ?? targets[1];
  await page.selectOption('#target', other);
  await page.waitForFunction((b) => document.querySelector('#text')?.textContent !== b, before);
  await page.locator('#text .blocklist li').first().hover();
  assert.ok(await page.locator('#text .seg.hl').count() > 0, 'hovering a block highlights its text');
  await shot('text');
  await accessible('text view');
});

test('the request view marks a cache breakpoint', async () => {
  await page.selectOption('#target', 'cached');
  await page.click('#tab-request');
  await page.waitForSelector('#request tr.breakpoint');
  assert.ok(await page.locator('#request mark.bp').count() > 0, 'a breakpoint is marked in the body');
  assert.match(await page.textContent('#request .fingerprints'), /[0-9a-f]{64}/);
  assert.match(await page.textContent('#request .costline'), /repeat/);
  await shot('request');
  await accessible('request view');
});

test('the tools view lists offered and excluded tools with reasons', async () => {
  await page.click('#tab-tools');
  await page.waitForSelector('#tools table.excluded tbody tr');
  assert.match(await page.textContent('#tools table.excluded'), /switched off/);
  await shot('tools');
});

test('a diff of two sends names the first divergent block and the breakpoints', async () => {
  await page.click('#tab-diff');
  await page.selectOption('#diff-mode', 'sends');
  await page.selectOption('#send-b', 'project');
  await page.click('#run-diff');
  await page.waitForSelector('#diff table tbody tr');
  assert.match(await page.textContent('#diff .divergent'), /First divergent block/);
  assert.match(await page.textContent('#diff table'), /survives|broken/);
  await shot('diff');
  await accessible('diff view');
});

test('a diff of two versions on one send highlights the first divergent block and lists surviving breakpoints', async () => {
  await page.selectOption('#target', 'cached');
  await page.selectOption('#diff-mode', 'versions');
  const versions = await page.$$eval('#ref-b option', (os) => os.map((o) => o.value));
  assert.ok(versions.includes(candidate.id), `the second version is offered: ${versions}`);
  assert.equal(await page.inputValue('#ref'), 'production');
  await page.selectOption('#ref-b', candidate.id);
  await page.evaluate(() => document.getElementById('diff').replaceChildren());
  await page.click('#run-diff');
  await page.waitForSelector('#diff table tbody tr');
  // The first divergent block is the one the candidate changed, highlighted.
  assert.equal((await page.textContent('#diff .divergent mark')).trim(), candidate.block);
  assert.match(await page.textContent('#diff .diverges'), /block: style/);
  // Every breakpoint of the first request is listed with whether it survives: both sit after the
  // changed block (the end of the system prefix, the tail of the messages), so neither does.
  const rows = () => page.$$eval('#diff table tbody tr', (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
  assert.deepEqual(await rows(), [['/system/1 stable', 'broken'], ['/messages/0/content/0 tail', 'broken']]);
  assert.match(await page.textContent('#diff .survival'), /^0 of 2 breakpoints survive/);
  await shot('diff-versions');
  await accessible('diff of two versions');

  // A version that changes only a note of the user slot: the system text is identical, so the
  // cached system prefix survives and only the tail breaks.
  await page.selectOption('#ref-b', noteOnly.id);
  await page.evaluate(() => document.getElementById('diff').replaceChildren());
  await page.click('#run-diff');
  await page.waitForSelector('#diff table tbody tr');
  assert.equal(await page.locator('#diff .divergent').count(), 0, 'no system block diverges');
  assert.deepEqual(await rows(), [['/system/1 stable', 'survives'], ['/messages/0/content/0 tail', 'broken']]);
  assert.match(await page.textContent('#diff .survival'), /^1 of 2 breakpoints survive/);
  await shot('diff-versions-note');
  await page.selectOption('#diff-mode', 'sends');
});

test('the edit-to-render round trip', async () => {
  await page.click('#tab-blocks');
  const times = [];
  for (let i = 0; i < 40; i++) {
    const n = await renders();
    const typed = await page.evaluate((k) => {
      const ta = document.getElementById('send');
      const send = JSON.parse(ta.value);
      send.user_message = `Edit number ${k}: what changed in the energy market this week?`;
      ta.value = JSON.stringify(send, null, 2);
      ta.dispatchEvent(new Event('input'));
      return performance.now();
    }, i);
    await settled(n);
    const done = await page.evaluate(() => window.inspectorTimings.at(-1));
    times.push({ request: done, total: await page.evaluate((t) => performance.now() - t, typed) });
  }
  const p95 = (xs) => xs.sort((a, b) => a - b)[Math.ceil(xs.length * 0.95) - 1];
  console.log(`inspector round trip over 40 edits: p95 request→render ${p95(times.map((t) => t.request)).toFixed(1)} ms; ` +
    `p95 keystroke→render ${p95(times.map((t) => t.total)).toFixed(1)} ms (including the 120 ms debounce and the test's polling)`);
  assert.equal(times.length, 40);
});

test('a send that breaks the schema is shown at its line', async () => {
  const n = await renders();
  await page.evaluate(() => {
    const ta = document.getElementById('send');
    const send = JSON.parse(ta.value);
    send.no_such_field = 1;
    ta.value = JSON.stringify(send, null, 2);
    ta.dispatchEvent(new Event('input'));
  });
  await page.waitForSelector('#send-errors li');
  const text = await page.textContent('#send-errors');
  const line = (await page.inputValue('#send')).split('\n').findIndex((l) => l.includes('no_such_field')) + 1;
  assert.match(text, new RegExp(`line ${line}: /no_such_field: unknown field`));
  assert.equal(await renders(), n, 'an invalid send is not rendered');
  await shot('send-error');
  await page.selectOption('#send-name', 'plain');
  await page.selectOption('#send-name', 'research');
  await page.waitForFunction(() => !document.querySelector('#send-errors li'));
});

test('an override preview on the voice platform re-renders without saving', async () => {
  await page.click('#tab-overrides');
  const n = await renders();
  await page.selectOption('#agent', 'voice-platform');
  await settled(n);
  await page.waitForSelector('#overrides fieldset.override');
  const m = await renders();
  await page.check('input[name=ov-payments][value=off]');
  await settled(m);
  await page.click('#tab-blocks');
  await page.waitForSelector('tr.block[data-block="capability.payments"]');
  assert.match(await page.textContent('tr.block[data-block="capability.payments"]'), /excluded/);
  await page.click('#tab-overrides');
  assert.equal(await page.isDisabled('#save-overrides'), false, 'an admin can save');
  await shot('overrides-admin');
  await accessible('overrides view');
});

test('copy full prompt puts the render --full text on the clipboard with its warnings', async () => {
  await page.click('#copy');
  await page.waitForFunction(() => /Copied/.test(document.getElementById('copy-status').textContent));
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.ok(copied.length > 200, 'the full prompt was copied');
  assert.equal(copied, await page.inputValue('#copied'));
  await shot('copy');
});

test('the cache chart is drawn by the page, the same as cache-sim --svg', async () => {
  await choose('#agent', 'chat-assistant');
  await page.selectOption('#target', 'cached');
  await page.click('#tab-cache');
  await page.click('#run-sim');
  await page.waitForFunction(() => !/Simulating/.test(document.getElementById('cache-status').textContent), null, { timeout: 60_000 });
  assert.equal(await page.locator('#cache-chart svg > title').count(), 1, await page.textContent('#cache-status'));
  assert.equal(await page.locator('#cache-chart svg > g').count(), Number(await page.inputValue('#sim-turns')));
  assert.match(await page.textContent('#cache-status'), /naive baseline costs/);
  // The page's chart.js and the CLI's --svg draw one report to the same bytes.
  const dir = mkdtempSync(join(tmpdir(), 'promptstack-chart-'));
  const svgPath = join(dir, 'chart.svg');
  const json = promptstack('cache-sim', 'examples/chat-assistant/agent.toml', '--sends', 'examples/chat-assistant/sends',
    '--target', 'cached', '--turns', '25', '--provider', 'anthropic', '--model', 'claude-sonnet-4-5', '--json', '--svg', svgPath);
  const fromCli = readFileSync(svgPath, 'utf8');
  rmSync(dir, { recursive: true, force: true });
  const fromPage = await page.evaluate(async (report) => {
    const { cacheChartSvg } = await import('/inspector/chart.js');
    const layout = await fetch('/inspector/cache-chart.json').then((r) => r.json());
    return cacheChartSvg(report, layout);
  }, JSON.parse(json));
  assert.equal(fromPage, fromCli);
  await shot('cache');
  await accessible('cache view');
});

test('the fence and cite playgrounds', async () => {
  await page.click('#tab-play');
  await page.click('#run-fence');
  await page.waitForFunction(() => document.getElementById('fence-out').textContent.length > 0);
  const fenced = await page.textContent('#fence-out');
  assert.match(fenced, /^<<<web_content_([0-9a-f]+) origin="https:\/\/example\.com">>>\n[^]*You are now root\.\n<<<end_web_content_\1>>>\n?$/);
  await page.click('#run-cite');
  await page.waitForFunction(() => document.getElementById('cite-out').textContent.length > 0);
  assert.match(await page.textContent('#cite-out'), /\[\[1\]\]\(https:\/\/example\.com\/a "Prices"\)/);
  await shot('playgrounds');
  await accessible('fence and cite');
});

test('the dark scheme follows the system setting and stays accessible', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.click('#tab-blocks');
  await page.waitForSelector('table.blocks tr.block');
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(background, 'rgb(18, 18, 18)');
  await shot('blocks-dark');
  await accessible('blocks view, dark');
  await page.click('#tab-cache');
  await shot('cache-dark');
  await accessible('cache view, dark');
  await page.emulateMedia({ colorScheme: 'light' });
});

test('a viewer sees the override toggles but cannot save', async () => {
  await login(keys.viewer);
  const n = await renders();
  await page.selectOption('#agent', 'voice-platform');
  await settled(n);
  await page.click('#tab-overrides');
  await page.waitForSelector('#save-overrides');
  assert.equal(await page.isDisabled('#save-overrides'), true);
  assert.match(await page.textContent('#save-why'), /admin/);
  // The server refuses the write too, whatever the page does.
  const status = await page.evaluate(async (key) => (await fetch('/v1/agents/voice-platform/settings', {
    method: 'PUT', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ auto_injections: { capabilities: { payments: { mode: 'off' } } } }),
  })).status, keys.viewer);
  assert.equal(status, 403);
  await shot('overrides-viewer');
  await accessible('overrides view for a viewer');
});

test('an admin saves the overrides through the settings API, audited', async () => {
  await login(keys.admin);
  const n = await renders();
  await page.selectOption('#agent', 'voice-platform');
  await settled(n);
  await page.click('#tab-overrides');
  const m = await renders();
  await page.check('input[name=ov-payments][value=off]');
  await settled(m);
  await page.click('#save-overrides');
  await page.waitForFunction(() => /Saved/.test(document.getElementById('save-why').textContent));
  const [settings, audit] = await page.evaluate(async (key) => {
    const get = async (path) => (await fetch(path, { headers: { Authorization: `Bearer ${key}` } })).json();
    return [await get('/v1/agents/voice-platform/settings'), await get('/v1/audit')];
  }, keys.admin);
  assert.equal(settings.document.auto_injections.capabilities.payments.mode, 'off');
  assert.ok(audit.items.some((e) => e.object.includes('voice-platform') && /settings/.test(e.action)), JSON.stringify(audit.items));
  await shot('overrides-saved');
});

test('after a save the toggles still preview, and a plain render returns the saved state', async () => {
  // The previous test saved `payments: off` for this tenant.
  await page.waitForSelector('#overrides fieldset.override');
  assert.match(await page.textContent('#stored-note'), /revision 1/);
  assert.equal(await page.isChecked('input[name=ov-payments][value=off]'), true, 'the toggle shows the saved state');
  assert.equal(await page.evaluate(() => document.body.dataset.preview), 'false');
  const m = await renders();
  await page.check('input[name=ov-payments][value=default]');
  await settled(m);
  assert.equal(await page.evaluate(() => document.body.dataset.preview), 'true');
  assert.match(await page.textContent('#status'), /preview of unsaved settings/);
  await page.click('#tab-blocks');
  await page.waitForSelector('tr.block[data-block="capability.payments"]');
  const row = page.locator('tr.block[data-block="capability.payments"]');
  assert.doesNotMatch(await row.locator('td.state').textContent(), /excluded/, 'the preview includes payments again');
  await shot('overrides-preview-over-saved');
  await page.click('#tab-overrides');
  await accessible('overrides view over saved settings');

  // Without `settings`, the same send renders as saved; with them, as previewed.
  const send = JSON.parse(await page.inputValue('#send'));
  const explain = async (settings) => (await apiCall('POST', '/v1/agents/voice-platform/explain', keys.viewer,
    { send, ...(settings ? { settings } : {}) })).json;
  const state = (answer) => answer.detail.assembly.blocks.find((b) => b.id === 'capability.payments').state.state;
  const plain = await explain();
  assert.equal(state(plain), 'excluded', 'a plain render returns the saved state');
  assert.equal(plain.preview, undefined, 'a plain render is not a preview');
  const saved = (await apiCall('GET', '/v1/agents/voice-platform/settings', keys.viewer)).json.document;
  const previewOfSaved = await explain(saved);
  assert.equal(previewOfSaved.preview, true);
  assert.equal(previewOfSaved.fingerprint, plain.fingerprint, 'previewing the saved settings renders what is saved');
  const previewed = await explain({ auto_injections: {} });
  assert.equal(state(previewed), 'included');
  assert.notEqual(previewed.fingerprint, plain.fingerprint);
  // Previewing stored nothing.
  assert.deepEqual((await apiCall('GET', '/v1/agents/voice-platform/settings', keys.viewer)).json.document, saved);
});

test('a key submitted while the remembered key still connects wins, whatever answers last', async () => {
  await login(keys.viewer);
  // The tab now remembers the viewer key. Slow its answers down so that the connect the page
  // starts on load with it is still in flight when the admin key is submitted.
  const slow = async (route) => {
    if (route.request().headers().authorization === `Bearer ${keys.viewer}`) await new Promise((r) => setTimeout(r, 1500));
    await route.continue().catch(() => {});
  };
  await page.route('**/v1/**', slow);
  try {
    await page.goto(`${base}/`);
    await page.fill('#key', keys.admin);
    await page.click('#key-form button[type=submit]');
    await page.waitForFunction(() => document.body.dataset.connecting === 'false' && Number(document.body.dataset.renders ?? 0) > 0);
    await choose('#agent', 'voice-platform');
    // Let the remembered key's late answers arrive: they must change nothing.
    await page.waitForTimeout(2000);
    assert.match(await page.textContent('#whoami'), /admin/);
    assert.equal(await page.inputValue('#agent'), 'voice-platform');
    assert.match(await page.textContent('#status'), /^voice-platform/);
    await page.click('#tab-overrides');
    await page.waitForSelector('#save-overrides');
    assert.equal(await page.isDisabled('#save-overrides'), false, 'the admin key may save');
  } finally {
    await page.unroute('**/v1/**', slow);
  }
});

test('a stage without a user message: the request view takes a sample, and its errors stay in it', async () => {
  await login(keys.admin);
  await choose('#agent', 'voice-platform');
  const send = JSON.parse(await page.inputValue('#send'));
  assert.equal(send.user_message, undefined, 'the stage has no user message');
  await page.click('#tab-request');
  await page.waitForSelector('#request pre.body');
  assert.equal(await page.isVisible('#sample-row'), true, 'the sample is offered');
  const sample = await page.inputValue('#sample-message');
  assert.ok(sample.length > 0, 'a sample is filled in');
  assert.ok((await page.textContent('#request pre.body')).includes(sample), 'the request carries the sample');
  assert.match(await page.textContent('#status'), /^voice-platform · version/);
  assert.equal(await page.locator('#status.error').count(), 0);
  await shot('request-stage-sample');
  await accessible('request view with a sample user message');

  // The body follows the sample.
  let n = await renders();
  await page.fill('#sample-message', 'I would like to book a visit on Tuesday.');
  await settled(n);
  await page.waitForFunction(() => document.querySelector('#request pre.body')?.textContent.includes('book a visit on Tuesday'));

  // Without a sample there is nothing to send: the error shows in the request view, and only there.
  n = await renders();
  await page.fill('#sample-message', '');
  await settled(n);
  await page.waitForSelector('#request .view-error');
  assert.match(await page.textContent('#request .view-error'), /nothing to send[^]*Enter a sample user message/);
  assert.match(await page.textContent('#status'), /^voice-platform · version/, 'the status line keeps the render');
  assert.equal(await page.locator('#status.error').count(), 0);
  await shot('request-stage-error');
  await accessible('request view with its error');
  for (const [tab, ready] of [['#tab-blocks', 'table.blocks tr.block'], ['#tab-text', '#text pre.prompt'], ['#tab-tools', '#tools table']]) {
    await page.click(tab);
    await page.waitForSelector(ready);
    assert.doesNotMatch(await page.innerText('main'), /nothing to send/, `${tab} shows no error of the request view`);
  }
  assert.equal(await page.locator('.view-error:visible').count(), 0);

  // A send with a user message needs no sample, and the request view does not offer one.
  await choose('#agent', 'chat-assistant');
  await page.click('#tab-request');
  await page.waitForSelector('#request pre.body');
  assert.equal(await page.isVisible('#sample-row'), false);
  assert.equal(await page.locator('#request .view-error').count(), 0);
});

test('the Evals tab\'s views put run data in as text, and read a comparison from the candidate\'s side', async () => {
  await login(keys.admin);
  const result = await page.evaluate(async () => {
    const { compareView, fromCandidate, verdictText } = await import('/inspector/evalchart.js');
    const { cellView, matrixView } = await import('/inspector/evals.js');
    const evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
    const outcome = (verdict) => ({ status: 'compared', scenarios: 6, unshared_scenarios: 0, mean_a: 0.9, mean_b: 0.4,
      difference: -0.5, interval: { low: -0.7, high: -0.3 }, verdict, mde: { planned: 0.2 }, mcnemar: [] });
    const answer = (candidate, verdict) => ({
      suite: `evals/${evil}.toml`, model: evil,
      base: { ref: 'production', version: candidate === 'a' ? 'v_b' : 'v_a', run: evil },
      candidate: { ref: evil, version: candidate === 'a' ? 'v_a' : 'v_b', run: null },
      summaries: [{ model: 'local', tier: 'small', version_id: 'v_a', scenarios: 6, runs: 12, passes: 11, mean_pass_rate: 0.9, accounting: {} },
        { model: 'local', tier: 'small', version_id: 'v_b', scenarios: 6, runs: 12, passes: 5, mean_pass_rate: 0.4, accounting: {} }],
      comparison: { model: 'local', a: 'v_a', b: 'v_b', outcome: outcome(verdict) },
      gate: { suite: evil, max_drop: 0.05, confidence: 0.95, passes: false, reason: evil },
    });
    // The pair is ordered by id, difference = b − a: a candidate that sorts second keeps the
    // sign, one that sorts first turns it round.
    const second = fromCandidate(answer('b', { verdict: 'favours', version_id: 'v_a' }));
    const first = fromCandidate(answer('a', { verdict: 'favours', version_id: 'v_a' }));
    const words = [
      verdictText(answer('b', { verdict: 'favours', version_id: 'v_a' })),
      verdictText(answer('a', { verdict: 'favours', version_id: 'v_a' })),
      verdictText(answer('b', { verdict: 'no_difference_shown' })),
      verdictText(answer('b', { verdict: 'too_few_scenarios', needed: 8 })),
      verdictText({ ...answer('b', null), comparison: { model: 'local', a: 'v_a', b: 'v_b', outcome: { status: 'not_compared', reason: evil } } }),
      verdictText({ ...answer('b', null), comparison: null }),
    ];
    const host = document.createElement('div');
    document.body.append(host);
    host.append(compareView(answer('b', { verdict: 'favours', version_id: 'v_a' })));
    const run = {
      id: evil, refs: [{ ref: 'production', version: 'v_a' }, { ref: 'v_b', version: 'v_b' }], models: [evil], scenarios: [evil, 's2'], repeats: 2,
      state: 'running', progress: { total: 8, done: 2, failed: 1, eta_seconds: 30 },
      results: [{ index: 0, version: 'v_a', model: evil, scenario: evil, repetition: 0, passed: true, error: null },
        { index: 5, version: 'v_b', model: evil, scenario: evil, repetition: 1, passed: false, error: evil }],
      statistics: null,
    };
    host.append(...matrixView(run, null, () => {}));
    host.append(cellView({ index: 0, version: 'v_a', model: evil, scenario: evil, repetition: 0, target: evil, completed_at: evil,
      row: { assertions: [{ id: evil, kind: evil, verdict: evil, reason: evil }], passed: false, error: evil,
        transcript: { request: evil, answer: evil, tool_calls: [{ name: evil, arguments: evil }] }, usage: {}, cost: 1234567 } }, () => {}));
    const marks = [...host.querySelectorAll('.mark')].map((m) => [m.dataset.index ?? '', m.textContent]);
    const out = {
      second, first, words, marks,
      markup: host.querySelectorAll('img, script').length,
      pwned: window.__pwned,
      text: host.textContent.includes(evil),
      desc: host.querySelector('svg > desc').textContent,
      cost: host.querySelector('.usage').textContent,
    };
    host.remove();
    return out;
  });
  assert.deepEqual([result.second.difference, result.second.low, result.second.high], [-0.5, -0.7, -0.3]);
  assert.deepEqual([result.first.difference, result.first.low, result.first.high], [0.5, 0.3, 0.7]);
  assert.deepEqual([result.first.meanBase, result.first.meanCandidate], [0.4, 0.9]);
  assert.match(result.words[0], /favour the base/);
  assert.match(result.words[1], /favour the candidate/);
  assert.match(result.words[2], /^No difference shown: .*about 20\.0 points could have gone unseen/);
  assert.match(result.words[3], /^Too few shared scenarios for a verdict \(6 run under both; a verdict needs 8\)/);
  assert.match(result.words[4], /^Not compared: <img/);
  assert.match(result.words[5], /^No comparison/);
  assert.match(result.desc, /base production \(v_a\): mean pass rate 90\.0 % .*candidate − base: −50\.0 points over 6 shared scenarios \(interval −70\.0 points to −30\.0 points\)/);
  // Cells in versions × models × scenarios × repeats order: the pending ones are marked, the
  // completed ones say how they ended.
  assert.deepEqual(result.marks, [['0', '✓'], ['', '·repetition 2 pending'], ['', '·repetition 1 pending'], ['', '·repetition 2 pending'],
    ['', '·repetition 1 pending'], ['5', '!'], ['', '·repetition 1 pending'], ['', '·repetition 2 pending']]);
  assert.equal(result.markup, 0, 'no element was made from the data');
  assert.equal(result.pwned, undefined);
  assert.ok(result.text, 'the data are shown as text');
  assert.match(result.cost, /cost \$1\.234567/);
});
