// Writes cases/<case>/expected.txt with the exact output of the peer's buildSystemPrompt
// for cases/<case>/input.json. `--check` compares instead of writing (exit 1 on a difference).
// Usage: TZ=UTC node generate.mjs [--check] [case ...]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { expectedPath, listCases, loadCase, loadPeer, render } from "./harness.mjs";

const args = process.argv.slice(2);
const check = args.includes("--check");
const wanted = args.filter((a) => a !== "--check");
const all = listCases();
for (const name of wanted) if (!all.includes(name)) throw new Error(`no such case: ${name}`);
const names = wanted.length > 0 ? wanted : all;

const buildSystemPrompt = await loadPeer();
const outputs = new Map();
let failures = 0;
for (const name of all) {
  const c = loadCase(name);
  const out = render(buildSystemPrompt, c);
  outputs.set(name, { c, out });
}
for (const name of names) {
  const { c, out } = outputs.get(name);
  // `sameAs` records a claim that options the peer ignores really change nothing.
  if (c.sameAs !== undefined) {
    const other = outputs.get(c.sameAs);
    if (!other) throw new Error(`${name}: sameAs names unknown case ${c.sameAs}`);
    if (other.out !== out) {
      console.error(`FAIL ${name}: output differs from ${c.sameAs}`);
      failures++;
    }
  }
  const file = expectedPath(name);
  if (check) {
    const old = existsSync(file) ? readFileSync(file, "utf8") : null;
    if (old !== out) {
      console.error(`FAIL ${name}: expected.txt is ${old === null ? "missing" : "stale"}`);
      failures++;
    } else {
      console.error(`ok   ${name} (${Buffer.byteLength(out)} bytes)`);
    }
  } else {
    writeFileSync(file, out, "utf8");
    console.error(`wrote ${name} (${Buffer.byteLength(out)} bytes)`);
  }
}
if (failures > 0) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
