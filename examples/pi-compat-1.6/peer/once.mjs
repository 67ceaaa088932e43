// Renders one case with the peer and prints it: a whole node process running buildSystemPrompt
// once, for timing next to a whole `promptstack render` process.
// Usage: TZ=UTC node once.mjs <case>
import { listCases, loadCase, loadPeer, render } from "./harness.mjs";

const name = process.argv[2];
if (!listCases().includes(name)) throw new Error(`no such case: ${name}`);
const buildSystemPrompt = await loadPeer();
process.stdout.write(render(buildSystemPrompt, loadCase(name)));
