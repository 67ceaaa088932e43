// The buildSystemPrompt drop-in serving 1.6.0, called again and again with the same options
// object, as an application calls it on every turn: the object is recognised by its identity and
// its answer kept, so these tests change the object in place between calls (every member, at
// every depth the drop-in reads), move the package directory, and compare each answer with the real function of @earendil-works/pi-coding-agent@1.6.0 (on the escaped
// options, as test/pi-compat-1.6.test.mjs does), which reads everything afresh on every call.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as harness16 from "../../../examples/pi-compat-1.6/peer/harness.mjs";
import { changedInPlace } from "../testkit/checks.mjs";
import { edits073, random, TOOLS, WORDS } from "../testkit/pi-options.mjs";

const require = createRequire(import.meta.url);
const { buildSystemPrompt } = require("../index.js");

const peer16 = await harness16.loadPeer();
const V16 = { version: "1.6.0" };

const outcome = (f) => {
  try {
    return f();
  } catch (error) {
    return `<threw ${error.message}>`;
  }
};

test("the same 1.6.0 options object, changed in place between calls, gives the peer's bytes on every call", () => {
  const rnd = random(0x5eed_0160);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const edits = [
    ...edits073(rnd),
    (o) => (o.hiddenTools ??= []).push(pick(TOOLS)),
    (o) => (o.hiddenTools = rnd() < 0.3 ? undefined : o.hiddenTools),
    (o) => ((o.toolGuidelines ??= {})[pick(TOOLS)] = [pick(WORDS)]),
    (o) => o.toolGuidelines && Object.values(o.toolGuidelines)[0]?.push(pick(WORDS)),
    (o) => ((o.sections ??= {})[pick(["intro", "rules", "z-last"])] = pick(WORDS)),
    (o) => o.sections && delete o.sections[pick(["intro", "rules", "z-last"])],
    (o) => (o.forceSystemPrompt = rnd() < 0.7 ? undefined : pick(["forced", "forced again"])),
  ];
  changedInPlace({
    rnd,
    edits,
    enterCase: harness16.enterCase,
    // The peer refuses what the drop-in refuses (a section name) or renders context files raw;
    // compare with the escaped options, as the 1.6.0 suite does.
    expected: (options) => outcome(() => peer16(harness16.escapeContext(options))),
    actual: (options) => outcome(() => buildSystemPrompt(options, V16)),
  });
});

test("one options object served as both versions keeps each version's answer apart", () => {
  const options = { cwd: "/w", selectedTools: ["read", "bash"] };
  harness16.enterCase({ nowMs: Date.UTC(2026, 0, 2), packageDir: "/opt/pi", options });
  // A new object with the same members is never an object answered before.
  const first073 = buildSystemPrompt({ ...options }, { version: "0.73.1" });
  assert.match(first073, /Current date: 2026-01-02\n/);
  for (let i = 0; i < 2; i++) {
    assert.equal(buildSystemPrompt(options, { version: "0.73.1" }), first073);
    assert.equal(buildSystemPrompt(options, V16), peer16(options));
  }
});
