// Checks of the buildSystemPrompt drop-in that every served version runs the same way, each
// against its own peer. (Outside test/, which node's test runner collects whole.)
import assert from "node:assert/strict";

/**
 * Calls the drop-in 600 times with one options object changed in place between calls, as an
 * application calls it on every turn. Most calls repeat the last one unchanged (the kept
 * answer); four in ten first apply one of `edits`; now and then the package directory moves
 * (and, with `moveClock`, the clock by a day). Each call's answer, asked twice, must be
 * `expected(options)`, the peer's answer read afresh.
 */
export function changedInPlace({ rnd, edits, enterCase, expected, actual, moveClock = false }) {
  const options = { cwd: "/w", contextFiles: [{ path: "/w/AGENTS.md", content: "one" }], skills: [] };
  const c = { nowMs: Date.UTC(2026, 0, 2, 12), packageDir: "/opt/pi", options };
  let changed = 0;
  for (let i = 0; i < 600; i++) {
    if (rnd() < 0.4) {
      edits[Math.floor(rnd() * edits.length)](options);
      changed++;
    }
    if (moveClock && rnd() < 0.05) c.nowMs += 86400000;
    if (rnd() < 0.05) c.packageDir = c.packageDir === "/opt/pi" ? "/srv/pi" : "/opt/pi";
    enterCase(c);
    const want = expected(options);
    assert.ok(actual(options) === want, `call ${i} ${JSON.stringify(options)}`);
    assert.ok(actual(options) === want, `call ${i} again`);
  }
  assert.ok(changed > 150, `${changed} edits`);
}

/**
 * The package directory: each of `dirs` as PI_PACKAGE_DIR gives the peer's bytes, and an explicit
 * `packageDir` wins over the environment. `render(options, extra)` calls the drop-in with
 * `extra` added to the version's own call options.
 */
export function packageDirectory(t, { enterCase, peer, render, dirs }) {
  const saved = process.env.PI_PACKAGE_DIR;
  t.after(() => {
    process.env.PI_PACKAGE_DIR = saved;
  });
  const c = { nowMs: Date.UTC(2026, 0, 2), packageDir: "/opt/pi", options: { cwd: "/w" } };
  enterCase(c);
  for (const dir of dirs) {
    process.env.PI_PACKAGE_DIR = dir;
    assert.equal(render(c.options, {}), peer(c.options), dir);
  }
  process.env.PI_PACKAGE_DIR = "/opt/pi";
  const explicit = render(c.options, { packageDir: "/srv/pi-docs" });
  assert.match(explicit, /Main documentation: \/srv\/pi-docs\/README\.md\n/);
  assert.doesNotMatch(explicit, /\/opt\/pi/);
}
