// Times the peer's buildSystemPrompt on every parity case of one harness after warm-up and
// prints JSON. Each case is first checked to render exactly its expected.txt, so the timed work
// is the work that produces the fixture bytes. A case that `differs` is timed on its escaped
// options (`escapeContext`), whose output is the intended.txt promptstack renders, so both sides
// produce the same bytes.
// Options: [--warmup N] [--batches N] [--calls N] [--real-package-dir]
//   --warmup N   calls per case before timing (default 5000)
//   --batches N  timed batches per case; the median batch is reported (default 41)
//   --calls N    calls per batch; a batch's time divided by N is one sample (default 2000)
//   --real-package-dir  leave PI_PACKAGE_DIR unset so the peer walks the file system for
//                its documentation paths on every default-path call, as it does when
//                installed; outputs then differ from the fixtures and are not checked.
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { enterCase, escapeContext } from "./cases.mjs";

// The generated large case (peer/large.mjs): timed on its own, left out of the overall figure.
const LARGE_CASE = "large";

/** The positive whole number after `name` in `argv`, or `fallback` when it is absent. */
export function countFlag(argv, name, fallback) {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} needs a positive integer`);
  return n;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Runs the benchmark over `harness` (a `caseHarness`) with the options in `argv`. */
export async function runBench(harness, argv = process.argv) {
  const warmup = countFlag(argv, "--warmup", 5000);
  const batches = countFlag(argv, "--batches", 41);
  const calls = countFlag(argv, "--calls", 2000);
  const realPackageDir = argv.includes("--real-package-dir");

  const buildSystemPrompt = await harness.loadPeer();
  const cases = harness
    .listCases()
    .map(harness.loadCase)
    .map((c) => (c.differs === undefined ? c : { ...c, options: escapeContext(c.options) }));

  function enter(c) {
    enterCase(c);
    if (realPackageDir) delete process.env.PI_PACKAGE_DIR;
  }

  // The sink keeps every result observable so the calls cannot be optimised away.
  let sink = 0;
  for (const c of cases) {
    enter(c);
    const out = buildSystemPrompt(c.options);
    const fixture = c.differs === undefined ? harness.expectedPath(c.name) : harness.intendedPath(c.name);
    if (!realPackageDir && out !== readFileSync(fixture, "utf8")) {
      throw new Error(`${c.name}: output differs from ${fixture}; run generate.mjs --check`);
    }
  }

  const results = [];
  for (const c of cases) {
    enter(c);
    for (let i = 0; i < warmup; i++) sink += buildSystemPrompt(c.options).length;
    const samples = [];
    for (let b = 0; b < batches; b++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) sink += buildSystemPrompt(c.options).length;
      samples.push(Number(process.hrtime.bigint() - t0) / calls);
    }
    results.push({
      case: c.name,
      bytes: Buffer.byteLength(buildSystemPrompt(c.options)),
      median_ns: Math.round(median(samples)),
      min_ns: Math.round(Math.min(...samples)),
    });
  }

  // Overall: one round renders every fixture once (the generated large case is reported on its
  // own), switching clock and package directory between cases; a sample is a batch of rounds
  // divided by the number of calls it made.
  const fixtures = cases.filter((c) => c.name !== LARGE_CASE);
  const rounds = Math.max(1, Math.round(calls / fixtures.length));
  for (let r = 0; r < rounds * 2; r++) for (const c of fixtures) (enter(c), (sink += buildSystemPrompt(c.options).length));
  const overall = [];
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) {
      for (const c of fixtures) {
        enter(c);
        sink += buildSystemPrompt(c.options).length;
      }
    }
    overall.push(Number(process.hrtime.bigint() - t0) / (rounds * fixtures.length));
  }

  console.log(
    JSON.stringify(
      {
        peer: `${harness.PEER_PACKAGE}@${harness.PEER_VERSION}`,
        function: "buildSystemPrompt",
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpu: cpus()[0]?.model ?? "unknown",
        verified_against_expected: !realPackageDir,
        package_dir: realPackageDir ? "real install (file-system walk per call)" : "PI_PACKAGE_DIR from input.json",
        settings: { warmup_calls_per_case: warmup, batches, calls_per_batch: calls },
        cases: results,
        overall: {
          median_ns_per_call: Math.round(median(overall)),
          cases: fixtures.length,
        },
        sink,
      },
      null,
      2,
    ),
  );
}
