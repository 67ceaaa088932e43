// Writes every cases/<case>/expected.txt from the peer (kit/generate.mjs says how); `--check`
// compares instead of writing. Usage: TZ=UTC node generate.mjs [--check] [case ...]
import { runGenerate } from "../../pi-compat/peer/kit/generate.mjs";
import harness from "./harness.mjs";

await runGenerate(harness);
