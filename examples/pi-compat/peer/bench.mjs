// Times the peer's buildSystemPrompt on every parity case and prints JSON (kit/bench.mjs says
// how). Usage: TZ=UTC node bench.mjs [--warmup N] [--batches N] [--calls N] [--real-package-dir]
import { runBench } from "./kit/bench.mjs";
import harness from "./harness.mjs";

await runBench(harness);
