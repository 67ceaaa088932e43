// In one Node process, the coding agent's own buildSystemPrompt
// (@mariozechner/pi-coding-agent@0.73.1) against this package's drop-in, on the same inputs:
// every pi-compat case, the clock and the package directory pinned as the fixtures pin them.
// Both sides first render each case and must return the same bytes (and expected.txt); then,
// per case, timed batches of the two alternate so that load on the machine hits both alike.
// Our side is measured as an application calls it: options object in, string out, FFI included.
//
// Usage (after `node build.mjs --release` and `npm ci` in examples/pi-compat/peer):
//   TZ=UTC node bench.mjs [--warmup N] [--batches N] [--calls N] [--json]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";

import { enterCase, expectedPath, listCases, loadCase, loadPeer, PEER_VERSION } from "../../examples/pi-compat/peer/harness.mjs";

const require = createRequire(import.meta.url);
const { buildSystemPrompt } = require("./index.js");

function flag(name, fallback) {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} needs a positive integer`);
  return n;
}
const warmup = flag("--warmup", 2000);
const batches = flag("--batches", 21);
const calls = flag("--calls", 1000);

const peer = await loadPeer();
const cases = listCases().map(loadCase);

for (const c of cases) {
  enterCase(c);
  const expected = readFileSync(expectedPath(c.name), "utf8");
  if (peer(c.options) !== expected) throw new Error(`${c.name}: the peer does not return expected.txt`);
  if (buildSystemPrompt(c.options) !== expected) throw new Error(`${c.name}: the drop-in does not return expected.txt`);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// The sink keeps every result observable so no call can be optimised away.
let sink = 0;
function batch(fn, c) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) sink += fn(c.options).length;
  return Number(process.hrtime.bigint() - t0) / calls;
}

const rows = [];
for (const c of cases) {
  enterCase(c);
  for (let i = 0; i < warmup; i++) sink += peer(c.options).length + buildSystemPrompt(c.options).length;
  const peerNs = [];
  const oursNs = [];
  for (let b = 0; b < batches; b++) {
    peerNs.push(batch(peer, c));
    oursNs.push(batch(buildSystemPrompt, c));
  }
  rows.push({ case: c.name, bytes: Buffer.byteLength(peer(c.options)), peer_ns: median(peerNs), ours_ns: median(oursNs) });
}

// All cases in turn: one round renders every case once, switching the clock and the package
// directory between cases, as a process serving many threads would.
function round(fn) {
  for (const c of cases) {
    enterCase(c);
    sink += fn(c.options).length;
  }
}
const rounds = Math.max(1, Math.round(calls / cases.length));
const overallPeer = [];
const overallOurs = [];
for (let b = 0; b < batches; b++) {
  for (const [fn, out] of [
    [peer, overallPeer],
    [buildSystemPrompt, overallOurs],
  ]) {
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) round(fn);
    out.push(Number(process.hrtime.bigint() - t0) / (rounds * cases.length));
  }
}
const overall = { peer_ns: median(overallPeer), ours_ns: median(overallOurs) };

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const ratio = (peerNs, oursNs) => `${(peerNs / oursNs).toFixed(2)}×`;
if (process.argv.includes("--json")) {
  console.log(JSON.stringify({ peer: `@mariozechner/pi-coding-agent@${PEER_VERSION}`, node: process.version, settings: { warmup, batches, calls }, cases: rows, overall, sink }, null, 2));
} else {
  console.log(`peer @mariozechner/pi-coding-agent@${PEER_VERSION} vs @promptstack/node, node ${process.version}, ${cpus()[0]?.model ?? "unknown cpu"}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`ns per call, median of ${batches} batches of ${calls} calls after ${warmup} warm-up calls per case; peer ÷ ours above 1× means the drop-in is faster`);
  console.log("");
  console.log("| case | bytes | peer | @promptstack/node | peer ÷ ours |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of rows) console.log(`| ${r.case} | ${r.bytes} | ${fmt(r.peer_ns)} | ${fmt(r.ours_ns)} | ${ratio(r.peer_ns, r.ours_ns)} |`);
  console.log(`| **all cases in turn** | | **${fmt(overall.peer_ns)}** | **${fmt(overall.ours_ns)}** | **${ratio(overall.peer_ns, overall.ours_ns)}** |`);
  console.error(`(sink ${sink})`);
}
