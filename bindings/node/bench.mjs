// In one Node process, the coding agent's own buildSystemPrompt
// (@mariozechner/pi-coding-agent@0.73.1) against this package's drop-in, on the same inputs:
// every pi-compat case, the clock and the package directory pinned as the fixtures pin them.
// Both sides first render each case and must return the same bytes (and expected.txt); then,
// per case, timed batches of the two alternate so that load on the machine hits both alike.
// Our side is measured as an application calls it: options object in, string out, FFI included.
//
// Usage (after `node build.mjs --release` and `npm ci` in examples/pi-compat/peer):
//   TZ=UTC node bench.mjs [--warmup N] [--batches N] [--calls N] [--json] [--pi VERSION] [--dropin PATH]
// `--pi 1.6.0` compares with `@earendil-works/pi-coding-agent@1.6.0` on the pi-compat-1.6 cases
// instead (after `npm ci` in examples/pi-compat-1.6/peer); a case that differs on purpose is
// timed on its escaped options, whose output both sides share (that harness's `escapeContext`).
// `--dropin PATH` times the `buildSystemPrompt` of another copy of this package (its index.js),
// so two builds can be compared in one window. `--fresh` gives both sides, on every call, a new
// options object with the case's members (`{ ...options }`), as an application that builds its
// options object per call would: the drop-in then cannot recognise an object it answered before
// and reads the options afresh.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { resolve } from "node:path";
import { countFlag, median } from "../../examples/pi-compat/peer/kit/bench.mjs";

const require = createRequire(import.meta.url);
const dropinAt = process.argv.indexOf("--dropin");
const dropin = require(dropinAt < 0 ? "./index.js" : resolve(process.argv[dropinAt + 1])).buildSystemPrompt;
const piAt = process.argv.indexOf("--pi");
const PI = piAt < 0 ? "0.73.1" : process.argv[piAt + 1];
if (PI !== "0.73.1" && PI !== "1.6.0") throw new Error("--pi takes 0.73.1 or 1.6.0");
const harness = await import(PI === "1.6.0" ? "../../examples/pi-compat-1.6/peer/harness.mjs" : "../../examples/pi-compat/peer/harness.mjs");
const { enterCase, expectedPath, listCases, loadCase, loadPeer, PEER_PACKAGE, PEER_VERSION } = harness;
// 0.73.1 is what the drop-in serves here without a version; 1.6.0 is asked for by name.
const SETTINGS = { version: PI };
const buildSystemPrompt = PI === "1.6.0" ? (options) => dropin(options, SETTINGS) : dropin;

const warmup = countFlag(process.argv, "--warmup", 2000);
const batches = countFlag(process.argv, "--batches", 21);
const calls = countFlag(process.argv, "--calls", 1000);

const peerFn = await loadPeer();
const cases = listCases()
  .map(loadCase)
  .map((c) => (c.differs === undefined ? c : { ...c, peerOptions: harness.escapeContext(c.options), fixture: harness.intendedPath(c.name) }));
// Each side called on a case: the peer on the escaped options of a case that differs.
const FRESH = process.argv.includes("--fresh");
const peerCall = FRESH ? (c) => peerFn({ ...(c.peerOptions ?? c.options) }) : (c) => peerFn(c.peerOptions ?? c.options);
const oursCall = FRESH ? (c) => buildSystemPrompt({ ...c.options }) : (c) => buildSystemPrompt(c.options);

for (const c of cases) {
  enterCase(c);
  const expected = readFileSync(c.fixture ?? expectedPath(c.name), "utf8");
  if (peerCall(c) !== expected) throw new Error(`${c.name}: the peer does not return expected.txt`);
  if (oursCall(c) !== expected) throw new Error(`${c.name}: the drop-in does not return expected.txt`);
}

// The sink keeps every result observable so no call can be optimised away.
let sink = 0;
// Wall time per call, and CPU time per call (user + system of the whole process, from
// process.cpuUsage): on a loaded machine the process gets a fraction of a core, which inflates
// wall time but not CPU time.
function batch(fn, c) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) sink += fn(c).length;
  const wall = Number(process.hrtime.bigint() - t0) / calls;
  const cpu = process.cpuUsage(cpu0);
  return [wall, ((cpu.user + cpu.system) * 1000) / calls];
}

const rows = [];
for (const c of cases) {
  enterCase(c);
  for (let i = 0; i < warmup; i++) sink += peerCall(c).length + oursCall(c).length;
  const peerNs = [];
  const oursNs = [];
  const peerCpu = [];
  const oursCpu = [];
  for (let b = 0; b < batches; b++) {
    const [pw, pc] = batch(peerCall, c);
    const [ow, oc] = batch(oursCall, c);
    peerNs.push(pw);
    peerCpu.push(pc);
    oursNs.push(ow);
    oursCpu.push(oc);
  }
  rows.push({
    case: c.name,
    bytes: Buffer.byteLength(oursCall(c)),
    peer_ns: median(peerNs),
    ours_ns: median(oursNs),
    peer_cpu_ns: median(peerCpu),
    ours_cpu_ns: median(oursCpu),
  });
}

// All cases in turn: one round renders every case once, switching the clock and the package
// directory between cases, as a process serving many threads would.
function round(fn) {
  for (const c of cases) {
    enterCase(c);
    sink += fn(c).length;
  }
}
const rounds = Math.max(1, Math.round(calls / cases.length));
const overallPeer = [];
const overallOurs = [];
const overallPeerCpu = [];
const overallOursCpu = [];
for (let b = 0; b < batches; b++) {
  for (const [fn, out, outCpu] of [
    [peerCall, overallPeer, overallPeerCpu],
    [oursCall, overallOurs, overallOursCpu],
  ]) {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) round(fn);
    out.push(Number(process.hrtime.bigint() - t0) / (rounds * cases.length));
    const cpu = process.cpuUsage(cpu0);
    outCpu.push(((cpu.user + cpu.system) * 1000) / (rounds * cases.length));
  }
}
const overall = {
  peer_ns: median(overallPeer),
  ours_ns: median(overallOurs),
  peer_cpu_ns: median(overallPeerCpu),
  ours_cpu_ns: median(overallOursCpu),
};

// The general API on two example sends: assemble (the send as an object, so its JSON encoding
// is included) and compose one target, as an application calls it per send.
const { Agent } = require("./index.js");
const { join } = await import("node:path");
const { fileURLToPath } = await import("node:url");
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const api = [];
for (const [example, send, target] of [
  ["chat-assistant", "research.json", "cached"],
  ["coding-agent", null, null],
  ["pi-compat", "default-minimal.json", "system"],
]) {
  const agent = Agent.fromPath(join(ROOT, "examples", example, "agent.toml"));
  const sendFile = send ?? (await import("node:fs")).readdirSync(join(ROOT, "examples", example, "sends")).sort()[0];
  const sendObject = JSON.parse(readFileSync(join(ROOT, "examples", example, "sends", sendFile), "utf8"));
  const targetId = target ?? agent.targets[0];
  const once = () => agent.assemble(sendObject).compose(targetId).system;
  for (let i = 0; i < warmup; i++) sink += once().length;
  const samples = [];
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += once().length;
    samples.push(Number(process.hrtime.bigint() - t0) / calls);
  }
  api.push({ send: `${example}/${sendFile}`, target: targetId, ns: median(samples) });
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const ratio = (peerNs, oursNs) => `${(peerNs / oursNs).toFixed(2)}×`;
if (process.argv.includes("--json")) {
  console.log(JSON.stringify({ peer: `${PEER_PACKAGE}@${PEER_VERSION}`, node: process.version, settings: { warmup, batches, calls, fresh: FRESH }, cases: rows, overall, api, sink }, null, 2));
} else {
  console.log(`peer ${PEER_PACKAGE}@${PEER_VERSION} vs @promptstack/node, node ${process.version}, ${cpus()[0]?.model ?? "unknown cpu"}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`ns per call (wall, then CPU of the process), median of ${batches} batches of ${calls} calls after ${warmup} warm-up calls per case; peer ÷ ours above 1× means the drop-in is faster`);
  console.log("");
  console.log("| case | bytes | peer | @promptstack/node | peer ÷ ours | peer CPU | ours CPU | CPU peer ÷ ours |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  const line = (name, bytes, r) =>
    `| ${name} | ${bytes} | ${fmt(r.peer_ns)} | ${fmt(r.ours_ns)} | ${ratio(r.peer_ns, r.ours_ns)} | ${fmt(r.peer_cpu_ns)} | ${fmt(r.ours_cpu_ns)} | ${ratio(r.peer_cpu_ns, r.ours_cpu_ns)} |`;
  for (const r of rows) console.log(line(r.case, r.bytes, r));
  console.log(line("**all cases in turn**", "", overall));
  console.log("");
  console.log("| `agent.assemble(send).compose(target).system` | target | ns per call |");
  console.log("|---|---|---:|");
  for (const r of api) console.log(`| ${r.send} | ${r.target} | ${fmt(r.ns)} |`);
  console.error(`(sink ${sink})`);
}
