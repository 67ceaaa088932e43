#!/usr/bin/env bash
# Side by side, in one run: the peer's buildSystemPrompt under node and promptstack on the same
# parity cases. Both sides first check that they produce exactly each case's expected.txt, then
# time per-call cost after a warm-up (median of batches). promptstack is measured twice:
#   full   — clear_caches + assemble + compose: a full assembly reusing nothing from earlier calls
#            (every block rendered; token counts and the fingerprint are made only when asked
#            for, and nothing here asks);
#   render — assemble_fresh + compose: every block rendered on a warm agent (a new thread);
#   reuse  — assemble + compose for a thread's later sends: the stable half reused by its key.
# Usage: examples/pi-compat/bench.sh [--batches N] [--calls N] [--warmup N]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

(cd "$here/peer" && [ -d node_modules ] || npm ci --silent)
cargo build --quiet --release -p promptstack --example pi_compat_bench --manifest-path "$root/Cargo.toml"

(cd "$here/peer" && TZ=UTC node bench.mjs "$@") > "$out/peer.json"
"$root/target/release/examples/pi_compat_bench" "$@" > "$out/promptstack.json"

node --input-type=module - "$out/peer.json" "$out/promptstack.json" <<'JS'
import { readFileSync } from "node:fs";
const peer = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ps = JSON.parse(readFileSync(process.argv[3], "utf8"));
const byCase = new Map(ps.cases.map((c) => [c.case, c]));
const ratio = (a, b) => (a / b).toFixed(1) + "×";
console.log(`peer: ${peer.peer} on node ${peer.node} (${peer.cpu}); promptstack release build`);
console.log("");
console.log("| case | bytes | peer | full | peer ÷ full | render | peer ÷ render | reuse | peer ÷ reuse |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const p of peer.cases) {
  const r = byCase.get(p.case);
  if (!r || r.bytes !== p.bytes) throw new Error(`${p.case}: the two sides disagree on the output size`);
  console.log(`| ${p.case} | ${p.bytes} | ${p.median_ns} | ${r.full_ns} | ${ratio(p.median_ns, r.full_ns)} | ${r.render_ns} | ${ratio(p.median_ns, r.render_ns)} | ${r.reuse_ns} | ${ratio(p.median_ns, r.reuse_ns)} |`);
}
const po = peer.overall.median_ns_per_call;
const o = ps.overall;
console.log(`| **all cases in turn** | | **${po}** | **${o.full_ns}** | **${ratio(po, o.full_ns)}** | **${o.render_ns}** | **${ratio(po, o.render_ns)}** | **${o.reuse_ns}** | **${ratio(po, o.reuse_ns)}** |`);
console.log("");
console.log("ns per call, median of batches after warm-up. A ratio above 1× means promptstack is faster.");
JS
