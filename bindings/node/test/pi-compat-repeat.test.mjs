// The buildSystemPrompt drop-in called again and again with the same options object, as an
// application calls it on every turn: the object is recognised by its identity and its answer
// kept, so these tests change the object in place between calls (every member, at every depth
// the drop-in reads), move the clock, the time zone and the package directory, and compare each
// answer with the real function of @mariozechner/pi-coding-agent@0.73.1, which reads
// everything afresh on every call.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

import { enterCase, loadPeer } from "../../../examples/pi-compat/peer/harness.mjs";
import { changedInPlace } from "../testkit/checks.mjs";
import { edits073, random } from "../testkit/pi-options.mjs";

const require = createRequire(import.meta.url);
const { buildSystemPrompt, SendError } = require("../index.js");

const peer = await loadPeer();

test("the same 0.73.1 options object, changed in place between calls, gives the peer's bytes on every call", () => {
  const rnd = random(0x5eed_0073);
  const edits = edits073(rnd);
  changedInPlace({ rnd, edits, enterCase, expected: peer, actual: buildSystemPrompt, moveClock: true });
});

test("a kept 0.73.1 answer follows the local day, the time zone and the package directory", (t) => {
  const saved = { tz: process.env.TZ, dir: process.env.PI_PACKAGE_DIR };
  t.after(() => {
    process.env.TZ = saved.tz;
    process.env.PI_PACKAGE_DIR = saved.dir;
  });
  const options = { cwd: "/w" };
  // 2026-03-14T20:00Z is the 15th in Tokyo and the 14th in Los Angeles: the same instant, two days.
  const c = { nowMs: Date.UTC(2026, 2, 14, 20), packageDir: "/opt/pi", options };
  for (const zone of ["UTC", "Asia/Tokyo", "America/Los_Angeles", "Asia/Tokyo"]) {
    process.env.TZ = zone;
    enterCase(c);
    assert.equal(buildSystemPrompt(options), peer(options), zone);
    assert.equal(buildSystemPrompt(options), peer(options), `${zone} again`);
  }
  // Around local midnight, to the millisecond, in zones with offsets of odd minutes and
  // seconds (Amsterdam's mean time in 1900 is +00:19:32, Kolkata's +05:21:10), across years: the
  // kept answer is what a first call gives (a new object with the same members), the peer's
  // bytes or the same error.
  const outcome = (f) => {
    try {
      return f();
    } catch (error) {
      return `<threw ${error.name}: ${error.message}>`;
    }
  };
  let compared = 0;
  for (const zone of ["Asia/Kolkata", "Pacific/Chatham", "America/St_Johns", "Europe/Amsterdam", "UTC"]) {
    process.env.TZ = zone;
    for (const [year, month, day] of [[2026, 2, 14], [1900, 5, 30], [1000, 0, 1], [9999, 11, 31], [2024, 1, 29]]) {
      const midnight = new Date(year, month, day).getTime();
      for (const delta of [-86400000, -1, 0, 1, 3600000, 86399999]) {
        enterCase({ ...c, nowMs: midnight + delta });
        const first = outcome(() => buildSystemPrompt({ ...options }));
        const at = `${zone} ${new Date(midnight + delta).toISOString()}`;
        assert.equal(outcome(() => buildSystemPrompt(options)), first, at);
        assert.equal(outcome(() => buildSystemPrompt(options)), first, `${at} again`);
        if (year === 2026) {
          assert.equal(first, peer(options), at);
          compared++;
        }
      }
    }
  }
  assert.equal(compared, 30);
  process.env.TZ = "UTC";
  for (const dir of ["/opt/pi", "/srv/pi", "~/pi", "/opt/pi"]) {
    process.env.PI_PACKAGE_DIR = dir;
    assert.equal(buildSystemPrompt(options), peer(options), dir);
    assert.equal(buildSystemPrompt(options, { packageDir: "/explicit" }).includes("/explicit/README.md"), true);
  }
  // The custom path prints no documentation path: a kept answer serves every directory.
  const custom = { cwd: "/w", customPrompt: "custom" };
  for (const dir of ["/opt/pi", "/srv/pi"]) {
    process.env.PI_PACKAGE_DIR = dir;
    assert.equal(buildSystemPrompt(custom), peer(custom), dir);
  }
  // A year the drop-in refuses is refused on every call, kept answer or not.
  enterCase({ ...c, nowMs: Date.UTC(10000, 0, 1) });
  assert.throws(() => buildSystemPrompt(options), RangeError);
  assert.throws(() => buildSystemPrompt(options), RangeError);
});

test("a kept answer is never served for an object that now fails its checks, and a refused call keeps nothing", () => {
  enterCase({ nowMs: Date.UTC(2026, 0, 2), packageDir: "/opt/pi", options: {} });
  const options = { cwd: "/w", selectedTools: ["read"], toolSnippets: { read: "reads" } };
  assert.equal(buildSystemPrompt(options), peer(options));
  options.toolSnippets.read = { not: "a string" };
  assert.throws(() => buildSystemPrompt(options), TypeError);
  assert.throws(() => buildSystemPrompt(options), TypeError);
  options.toolSnippets.read = "reads again";
  assert.equal(buildSystemPrompt(options), peer(options));
  options.cwd = 7;
  assert.throws(() => buildSystemPrompt(options), TypeError);
  options.cwd = "/w";
  options.contextFiles = [{ path: "/a", content: 3 }];
  for (let i = 0; i < 2; i++) {
    assert.throws(
      () => buildSystemPrompt(options),
      (error) => error instanceof SendError && error.diagnostics.length > 0,
    );
  }
  options.contextFiles[0].content = "three";
  assert.equal(buildSystemPrompt(options), peer(options));
});

test("members the drop-in does not keep (getters, class instances, toJSON) are read afresh on every call", () => {
  enterCase({ nowMs: Date.UTC(2026, 0, 2), packageDir: "/opt/pi", options: {} });
  // A getter answering differently on each read.
  let n = 0;
  const counting = {
    cwd: "/w",
    get appendSystemPrompt() {
      n++;
      return `call ${Math.ceil(n / 100)}`;
    },
  };
  for (let i = 0; i < 3; i++) {
    n = i * 100;
    const got = buildSystemPrompt(counting);
    assert.match(got, new RegExp(`call ${i + 1}\\n`), `call ${i}`);
  }
  // A context file that is a class instance, and a list with toJSON.
  class File {
    constructor(path, content) {
      this.path = path;
      this.content = content;
    }
  }
  const files = [new File("/w/A.md", "first")];
  const options = { cwd: "/w", contextFiles: files };
  assert.equal(buildSystemPrompt(options), peer(options));
  files[0].content = "second";
  assert.equal(buildSystemPrompt(options), peer(options));
  assert.match(buildSystemPrompt(options), /\nsecond\n/);
  const guidelines = ["g1"];
  guidelines.toJSON = () => ["from toJSON"];
  const withToJSON = { cwd: "/w", promptGuidelines: guidelines };
  const first = buildSystemPrompt(withToJSON);
  assert.equal(buildSystemPrompt(withToJSON), first);
  // A getter that calls the drop-in again while its own call is being compared.
  const inner = { cwd: "/inner" };
  const outer = {
    get cwd() {
      buildSystemPrompt(inner);
      return "/outer";
    },
  };
  for (let i = 0; i < 3; i++) {
    assert.equal(buildSystemPrompt(outer), peer({ cwd: "/outer" }));
    assert.equal(buildSystemPrompt(inner), peer(inner));
  }
});
