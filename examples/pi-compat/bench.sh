#!/usr/bin/env bash
# Side by side, in one run: the peer's buildSystemPrompt under node and promptstack on the same
# parity cases (the 28 fixtures plus the generated large case, peer/large.mjs), interleaved: the
# run is a number of rounds, each timing the peer and then promptstack (every other round the
# other way round), so both sides see the same machine load. Both sides first check that they
# produce exactly each case's expected.txt, then time per-call cost after a warm-up (median of
# batches); the table shows the median over rounds and peer ÷ promptstack, and the last line the
# median of each round's own ratios (the steadier figure when the machine drifts).
# promptstack's paths:
#   cold       — clear_caches + assemble + compose: every cache empty, nothing reused from earlier
#                calls, no digest kept in the send (token counts and the fingerprint are made
#                only when asked for, and nothing here asks);
#   new thread — assemble_fresh + compose: every block rendered on a warm agent;
#   reuse      — assemble + compose for a thread's later sends: the stable half reused by its key
#                (the sends keep the digests of their facts, as a thread's kept send does).
# "fixtures in turn" is every fixture once per round of calls (the large case left out).
# Usage: examples/pi-compat/bench.sh [--peer 0.73|1.6] [--rounds N] [--batches N] [--calls N] [--warmup N]
# `--peer 1.6` runs the same comparison against @earendil-works/pi-coding-agent@1.6.0 on the
# pi-compat-1.6 cases (examples/pi-compat-1.6; its prompt has no date, so reuse keeps every block).
# PI_COMPAT_BENCH_BIN=PATH times that build of the promptstack side (e.g. one of an earlier commit,
# for a before/after comparison) instead of building this tree's.
set -euo pipefail
script_dir="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$script_dir/../.." && pwd)"
here="$script_dir"
example=pi-compat
if [ "${1:-}" = "--peer" ]; then
  case "${2:-}" in
    0.73) ;;
    1.6) example=pi-compat-1.6; here="$root/examples/pi-compat-1.6" ;;
    *) echo "--peer takes 0.73 or 1.6" >&2; exit 2 ;;
  esac
  shift 2
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

(cd "$here/peer" && [ -d node_modules ] || npm ci --silent)
bin="${PI_COMPAT_BENCH_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --quiet --release -p promptstack --example pi_compat_bench --manifest-path "$root/Cargo.toml"
  bin="$root/target/release/examples/pi_compat_bench"
fi

rounds=3
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "--rounds needs a positive integer" >&2; exit 2 ;; esac

peer() { (cd "$here/peer" && TZ=UTC node bench.mjs "${args[@]}") > "$out/peer.$1.json"; }
ours() { "$bin" --example "$example" "${args[@]}" > "$out/promptstack.$1.json"; }
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then peer "$r"; ours "$r"; else ours "$r"; peer "$r"; fi
done

node --input-type=module - "$out" "$rounds" <<'JS'
import { readFileSync } from "node:fs";
const [dir, n] = [process.argv[2], Number(process.argv[3])];
const load = (side, r) => JSON.parse(readFileSync(`${dir}/${side}.${r}.json`, "utf8"));
const runs = Array.from({ length: n }, (_, i) => ({ peer: load("peer", i + 1), ps: load("promptstack", i + 1) }));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ratio = (a, b) => (a / b).toFixed(2) + "×";
const first = runs[0].peer;
console.log(`peer: ${first.peer} on node ${first.node} (${first.cpu}); promptstack release build; ${n} interleaved rounds`);
console.log("");
console.log("| case | bytes | peer | cold | peer ÷ cold | new thread | peer ÷ new | reuse | peer ÷ reuse |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
const row = (label, bytes, p, c, f, u) =>
  console.log(`| ${label} | ${bytes} | ${p} | ${c} | ${ratio(p, c)} | ${f} | ${ratio(p, f)} | ${u} | ${ratio(p, u)} |`);
for (const pc of first.cases) {
  const per = runs.map(({ peer, ps }) => {
    const p = peer.cases.find((c) => c.case === pc.case);
    const r = ps.cases.find((c) => c.case === pc.case);
    if (!r || r.bytes !== p.bytes) throw new Error(`${pc.case}: the two sides disagree on the output size`);
    return { p: p.median_ns, c: r.full_ns, f: r.render_ns, u: r.reuse_ns };
  });
  const m = (k) => median(per.map((x) => x[k]));
  row(pc.case === "large" ? "**large (generated)**" : pc.case, pc.bytes, m("p"), m("c"), m("f"), m("u"));
}
const om = (f) => median(runs.map(f));
row(`**fixtures in turn (${first.overall.cases})**`, "", om((r) => r.peer.overall.median_ns_per_call), om((r) => r.ps.overall.full_ns), om((r) => r.ps.overall.render_ns), om((r) => r.ps.overall.reuse_ns));
console.log("");
console.log("ns per call: per round the median of batches after warm-up, then the median over rounds.");
console.log("A ratio above 1× means promptstack is faster. Per round, peer ÷ promptstack (cold / new thread / reuse):");
const paths = ["full_ns", "render_ns", "reuse_ns"];
const perRound = runs.map(({ peer, ps }) => {
  const l = ps.cases.find((c) => c.case === "large");
  const lp = peer.cases.find((c) => c.case === "large").median_ns;
  const po = peer.overall.median_ns_per_call;
  return { fixtures: paths.map((k) => po / ps.overall[k]), large: paths.map((k) => lp / l[k]) };
});
const show = (xs) => xs.map((x) => x.toFixed(2) + "×").join(" / ");
for (const [i, r] of perRound.entries()) {
  console.log(`  round ${i + 1}: fixtures ${show(r.fixtures)}; large ${show(r.large)}`);
}
// Each round times both sides under much the same load, so the median of the rounds' own ratios
// is the steadier figure when the machine's speed drifts from one round to the next.
const paired = (which) => paths.map((_, k) => median(perRound.map((r) => r[which][k])));
console.log(`Median of the rounds' ratios (cold / new thread / reuse): fixtures ${show(paired("fixtures"))}; large ${show(paired("large"))}`);
JS
