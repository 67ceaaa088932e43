// Two builds of the native addon side by side in one Node process, on the same calls: the
// chat-assistant research send (`assemble` from JSON text, `assembleStringified`, `request` in
// anthropic for target `cached`, `explain`) and the pi-compat drop-in's path (`systemTextAt` on
// the first pi-compat send). Timed batches of the two alternate, so load on the machine hits both
// alike; it prints the median time per call of each and their ratio.
//
// Usage: build each addon with `node build.mjs --release` and copy `promptstack.node` aside, then
//   node bench-addons.mjs BEFORE.node AFTER.node [batches (31)] [calls per batch (300)]
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [before, after, batchesArg, callsArg] = process.argv.slice(2);
if (!before || !after) throw new Error("usage: node bench-addons.mjs BEFORE.node AFTER.node [batches] [calls]");
const batches = Number(batchesArg ?? 31);
const calls = Number(callsArg ?? 300);

const example = join(root, "examples", "chat-assistant");
const spec = readFileSync(join(example, "agent.toml"), "utf8");
const send = readFileSync(join(example, "sends", "research.json"), "utf8");
const piSends = join(root, "examples", "pi-compat", "sends");
const piSend = readFileSync(join(piSends, readdirSync(piSends).filter((f) => f.endsWith(".json")).sort()[0]), "utf8");

function calls_of(native) {
  const agent = native.Agent.fromSource(spec, null, null);
  const assembly = agent.assemble(send);
  const pi = native.Agent.fromSource(native.piCompatSpec(), null, null);
  return {
    "assemble (JSON text)": () => agent.assemble(send),
    assembleStringified: () => agent.assembleStringified(send),
    "request (anthropic)": () => assembly.request("anthropic", { target: "cached" }),
    explain: () => agent.explain(send, null, null),
    "systemTextAt (drop-in)": () => pi.systemTextAt(piSend, "2026-12-06T15:00:00Z", "system"),
  };
}

const sides = { before: calls_of(require(resolve(before))), after: calls_of(require(resolve(after))) };
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const label of Object.keys(sides.before)) {
  const times = { before: [], after: [] };
  for (const side of ["before", "after"]) for (let i = 0; i < calls; i++) sides[side][label]();
  for (let b = 0; b < batches; b++) {
    for (const side of b % 2 ? ["after", "before"] : ["before", "after"]) {
      const fn = sides[side][label];
      const start = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) fn();
      times[side].push(Number(process.hrtime.bigint() - start) / calls);
    }
  }
  const [b, a] = [median(times.before), median(times.after)];
  console.log(`${label.padEnd(24)} before ${(b / 1000).toFixed(2)} µs  after ${(a / 1000).toFixed(2)} µs  after/before ${(a / b).toFixed(3)}`);
}
