// Writes cases/<case>/expected.txt with the exact output of the peer's buildSystemPrompt for
// cases/<case>/input.json and, where the harness allows cases that `differ`, for such a case
// also intended.txt: the peer's output for the input with its context files escaped as
// promptstack escapes them. `--check` compares instead of writing (exit 1 on a difference).
// Arguments: [--check] [case ...]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { escapeContext, render } from "./cases.mjs";

/** Writes or checks the fixtures of `harness` (a `caseHarness`) as `args` say. */
export async function runGenerate(harness, args = process.argv.slice(2)) {
  const check = args.includes("--check");
  const wanted = args.filter((a) => a !== "--check");
  const all = harness.listCases();
  for (const name of wanted) if (!all.includes(name)) throw new Error(`no such case: ${name}`);
  const names = wanted.length > 0 ? wanted : all;

  const buildSystemPrompt = await harness.loadPeer();
  const outputs = new Map();
  let failures = 0;
  for (const name of all) {
    const c = harness.loadCase(name);
    const out = render(buildSystemPrompt, c);
    let intended = out;
    if (harness.differs) {
      intended = render(buildSystemPrompt, { ...c, options: escapeContext(c.options) });
      // A case says that it differs exactly when escaping changes the peer's bytes.
      if ((c.differs !== undefined) !== (intended !== out)) throw new Error(`${name}: "differs" must be set exactly when escaping changes the output`);
    }
    outputs.set(name, { c, out, intended });
  }

  function writeOrCheck(file, out) {
    const name = file.split("/").slice(-2).join("/");
    if (check) {
      const old = existsSync(file) ? readFileSync(file, "utf8") : null;
      if (old !== out) {
        console.error(`FAIL ${name} is ${old === null ? "missing" : "stale"}`);
        failures++;
      } else {
        console.error(`ok   ${name} (${Buffer.byteLength(out)} bytes)`);
      }
    } else {
      writeFileSync(file, out, "utf8");
      console.error(`wrote ${name} (${Buffer.byteLength(out)} bytes)`);
    }
  }

  for (const name of names) {
    const { c, out, intended } = outputs.get(name);
    // `sameAs` records a claim that options the peer ignores really change nothing.
    if (c.sameAs !== undefined) {
      const other = outputs.get(c.sameAs);
      if (!other) throw new Error(`${name}: sameAs names unknown case ${c.sameAs}`);
      if (other.out !== out) {
        console.error(`FAIL ${name}: output differs from ${c.sameAs}`);
        failures++;
      }
    }
    writeOrCheck(harness.expectedPath(name), out);
    if (c.differs !== undefined) writeOrCheck(harness.intendedPath(name), intended);
  }
  if (failures > 0) {
    console.error(`${failures} failure(s)`);
    process.exit(1);
  }
}
