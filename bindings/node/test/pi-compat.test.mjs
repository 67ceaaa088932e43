// The buildSystemPrompt drop-in against the real function of
// @mariozechner/pi-coding-agent@0.73.1: every parity fixture, then seeded random option
// objects, compared byte for byte with the clock and the package directory pinned the same way
// for both (examples/pi-compat/peer/harness.mjs replaces Date and sets PI_PACKAGE_DIR).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import { enterCase, expectedPath, listCases, loadCase, loadPeer } from "../../../examples/pi-compat/peer/harness.mjs";
import { packageDirectory } from "../testkit/checks.mjs";
import { optionsGenerator } from "../testkit/pi-options.mjs";

const require = createRequire(import.meta.url);
const { buildSystemPrompt, SendError } = require("../index.js");

const peer = await loadPeer();

/** The first difference between two texts, for a readable failure. */
function firstDifference(got, want) {
  let i = 0;
  while (i < got.length && i < want.length && got[i] === want[i]) i++;
  return `first difference at UTF-16 offset ${i}: got ${JSON.stringify(got.slice(Math.max(0, i - 40), i + 40))}, want ${JSON.stringify(want.slice(Math.max(0, i - 40), i + 40))}`;
}

test("every pi-compat fixture: the drop-in returns the peer's bytes and expected.txt", () => {
  const names = listCases();
  assert.ok(names.length >= 20, "the parity cases must be found");
  for (const name of names) {
    const c = loadCase(name);
    enterCase(c);
    const expected = readFileSync(expectedPath(name), "utf8");
    const want = peer(c.options);
    assert.equal(want, expected, `${name}: the peer disagrees with expected.txt (run generate.mjs --check)`);
    const got = buildSystemPrompt(c.options);
    assert.ok(got === want, `${name}: ${firstDifference(got, want)}`);
  }
});

const RANDOM_CASES = Number(process.env.PI_COMPAT_RANDOM_CASES ?? 1000);

test(`${RANDOM_CASES} seeded random option objects: the drop-in returns the peer's bytes`, () => {
  assert.ok(RANDOM_CASES >= 500);
  const next = optionsGenerator("0.73.1", 0x5eed_0015);
  const failures = [];
  let customPath = 0;
  let withSkills = 0;
  for (let i = 0; i < RANDOM_CASES; i++) {
    const c = next();
    enterCase(c);
    const want = peer(c.options);
    let got;
    try {
      got = buildSystemPrompt(c.options);
    } catch (error) {
      got = `<threw ${error.name}: ${error.message}>`;
    }
    if (got !== want) failures.push(`case ${i} ${JSON.stringify(c.options)}\n  ${firstDifference(got, want)}`);
    if (c.options.customPrompt) customPath++;
    if (want.includes("<available_skills>")) withSkills++;
  }
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${RANDOM_CASES} differ`);
  // The generator must reach both paths and the skills section, or the comparison proves little.
  assert.ok(customPath > RANDOM_CASES / 10 && customPath < (RANDOM_CASES * 9) / 10, `custom path in ${customPath} cases`);
  assert.ok(withSkills > RANDOM_CASES / 20, `skills section in ${withSkills} cases`);
});

test("the date is the local calendar date, as the peer's local-time getters give it", (t) => {
  const saved = process.env.TZ;
  t.after(() => {
    process.env.TZ = saved;
  });
  // 2026-03-14T20:00Z is already the 15th in Tokyo and still the 14th in Los Angeles.
  const c = { nowMs: Date.UTC(2026, 2, 14, 20, 0, 0), packageDir: "/opt/pi", options: { cwd: "/w" } };
  for (const zone of ["Asia/Tokyo", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham", "UTC"]) {
    process.env.TZ = zone;
    enterCase(c);
    const want = peer(c.options);
    assert.equal(buildSystemPrompt(c.options), want, zone);
  }
  process.env.TZ = "Asia/Tokyo";
  enterCase(c);
  assert.match(buildSystemPrompt(c.options), /Current date: 2026-03-15\n/);
});

test("the package directory: PI_PACKAGE_DIR as the peer reads it, or an explicit packageDir", (t) => {
  packageDirectory(t, { enterCase, peer, render: (options, extra) => buildSystemPrompt(options, extra), dirs: ["~", "~/pi", "/opt/pi/", "/opt/x/../pi", "relative/pi", "/"] });
});

test("inputs outside the parity domain fail with an error instead of imitating JavaScript artefacts", () => {
  enterCase({ nowMs: Date.UTC(2026, 0, 2), packageDir: "/opt/pi", options: {} });
  assert.throws(() => buildSystemPrompt({}), TypeError);
  assert.throws(() => buildSystemPrompt(null), TypeError);
  assert.throws(() => buildSystemPrompt({ cwd: 7 }), TypeError);
  // A context file whose content is not a string does not fit the send's shape.
  assert.throws(
    () => buildSystemPrompt({ cwd: "/w", contextFiles: [{ path: "/a", content: 3 }] }),
    (error) => error instanceof SendError && error.diagnostics.length > 0,
  );
  // A non-string snippet, or a tool named like an Object.prototype member without its own
  // snippet, would be rendered as JavaScript renders it ("[object Object]", a function's source).
  assert.throws(() => buildSystemPrompt({ cwd: "/w", selectedTools: ["read"], toolSnippets: { read: { a: 1 } } }), TypeError);
  assert.throws(() => buildSystemPrompt({ cwd: "/w", selectedTools: ["toString"], toolSnippets: {} }), RangeError);
  // With its own snippet the name is an ordinary tool, on both sides.
  const own = { cwd: "/w", selectedTools: ["constructor"], toolSnippets: { constructor: "builds" } };
  assert.equal(buildSystemPrompt(own), peer(own));
  // Hidden skills are never read, whatever their fields hold; shown ones must be strings.
  const hidden = { cwd: "/w", skills: [{ disableModelInvocation: true }] };
  assert.equal(buildSystemPrompt(hidden), peer(hidden));
  assert.throws(() => buildSystemPrompt({ cwd: "/w", skills: [{ name: 1, description: "d", filePath: "f" }] }), TypeError);
  assert.throws(() => peer({ cwd: "/w", skills: [{ name: 1, description: "d", filePath: "f" }] }), TypeError);
  // Without the read tool the skills are never read, on either side.
  const unread = { cwd: "/w", selectedTools: ["bash"], skills: [{ name: 1, description: "d", filePath: "f" }] };
  assert.equal(buildSystemPrompt(unread), peer(unread));
  // A custom prompt or appended text that is not a string: JavaScript would print `true` where a
  // template prints `True`, so the drop-in refuses it.
  for (const options of [
    { cwd: "/w", customPrompt: "x", appendSystemPrompt: 5 },
    { cwd: "/w", customPrompt: 5 },
    { cwd: "/w", appendSystemPrompt: true },
  ]) {
    assert.throws(() => buildSystemPrompt(options), TypeError, JSON.stringify(options));
  }
});

test("a send read before is found again: a changed options object, a new day and a refused send all give what a first call gives", () => {
  const options = { cwd: "/w", contextFiles: [{ path: "/w/AGENTS.md", content: "one" }], skills: [] };
  const days = [Date.UTC(2026, 0, 2), Date.UTC(2026, 0, 3)];
  for (let round = 0; round < 2; round++) {
    for (const nowMs of days) {
      enterCase({ nowMs, packageDir: "/opt/pi", options });
      assert.equal(buildSystemPrompt(options), peer(options), `round ${round}, ${new Date(nowMs).toISOString()}`);
    }
  }
  // The same object changed in place, at the top and deep inside, is read afresh.
  options.contextFiles[0].content = "two";
  options.skills.push({ name: "s", description: "d", filePath: "/s/SKILL.md" });
  assert.equal(buildSystemPrompt(options), peer(options));
  assert.match(buildSystemPrompt(options), /\ntwo\n/);
  options.cwd = "/elsewhere";
  assert.equal(buildSystemPrompt(options), peer(options));
  // A refused send is refused on every call, with the same located diagnostics.
  const bad = { cwd: "/w", contextFiles: [{ path: "/a", content: 3 }] };
  const refusals = [0, 1].map(() => {
    try {
      buildSystemPrompt(bad);
    } catch (error) {
      return error;
    }
    return null;
  });
  for (const error of refusals) assert.ok(error instanceof SendError && error.diagnostics.length > 0);
  assert.equal(refusals[0].message, refusals[1].message);
  assert.deepEqual(refusals[0].diagnostics, refusals[1].diagnostics);
});
