// What the browser tests share: the binary, a server on a free port with a temporary data
// directory and keys, Debian's chromium, the API called from the test, screenshots and axe-core.
// (Not a test file: the test command lists the test files by name.)

import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = fileURLToPath(new URL('.', import.meta.url));
export const root = resolve(here, '../../../..');
export const bin = process.env.PROMPTSTACK_BIN ?? join(root, 'target/debug/promptstack');
const browserPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const artifacts = join(root, 'target/inspector-artifacts');
const axeSource = join(here, 'node_modules/axe-core/axe.min.js');

export const promptstack = (...args) => execFileSync(bin, args, { cwd: root, encoding: 'utf8', timeout: 60_000 });

const freePort = () => new Promise((ok, fail) => {
  const s = createServer();
  s.once('error', fail);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => ok(port)); });
});

/**
 * `promptstack serve --examples` (with `args` added) on a free port over a new data directory,
 * with an admin and a viewer key, once it answers: `{ server, base, data, keys }`.
 */
export async function startServer(name, args = []) {
  assert.ok(existsSync(bin), `no binary at ${bin}; build it with cargo build -p promptstack-cli`);
  mkdirSync(artifacts, { recursive: true });
  const data = mkdtempSync(join(tmpdir(), `promptstack-${name}-`));
  const keys = {};
  for (const role of ['admin', 'viewer']) {
    keys[role] = promptstack('keys', 'create', '--data', data, '--tenant', 'default', '--role', role).trim();
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(bin, ['serve', '--examples', '--data', data, '--listen', `127.0.0.1:${port}`, ...args], {
    cwd: root, stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) break;
    } catch { /* not yet listening */ }
    if (Date.now() > deadline) throw new Error(`the server did not answer at ${base} in time`);
    if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { server, base, data, keys };
}

/** Stops what `startServer` and `openPage` started, and removes the data directory. */
export async function stopAll({ browser, server, data }) {
  await browser?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (data) rmSync(data, { recursive: true, force: true });
}

/**
 * Headless chromium with one page (1400×1000): `{ browser, context, page }`. The page's
 * Content-Security-Policy allows only its own scripts; axe-core is injected by the test, so the
 * context bypasses it.
 */
export async function openPage() {
  const browser = await chromium.launch({ executablePath: browserPath, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, bypassCSP: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return { browser, context, page };
}

/**
 * The API of the server at `base`, called from the test itself (not through the page): the
 * status must be `expected`, or any success when none is given.
 */
export function api(base) {
  return async (method, path, key, body, expected = null) => {
    const headers = { Authorization: `Bearer ${key}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(`${base()}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    const json = text ? JSON.parse(text) : null;
    if (expected !== null) assert.equal(r.status, expected, `${method} ${path}: ${r.status} ${text}`);
    else assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
    return { json, headers: r.headers, status: r.status };
  };
}

/** A screenshot of the whole page, kept in target/inspector-artifacts/. */
export const shot = (page, name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/** axe-core on the current page: no serious or critical violations. */
export async function accessible(page, what) {
  await page.addScriptTag({ path: axeSource });
  const violations = await page.evaluate(async () => (await window.axe.run(document)).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`));
  assert.deepEqual(violations, [], `${what}: ${violations.join('\n')}`);
}
