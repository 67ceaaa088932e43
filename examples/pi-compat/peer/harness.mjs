// The parity cases of @mariozechner/pi-coding-agent@0.73.1 (see kit/cases.mjs in examples/pi-compat/peer):
// finds them, pins the clock and the package directory, and calls the peer's buildSystemPrompt.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { caseHarness } from "./kit/cases.mjs";

export { enterCase, escapeContext, render } from "./kit/cases.mjs";

const harness = caseHarness({
  peerDir: dirname(fileURLToPath(import.meta.url)),
  packageName: "@mariozechner/pi-coding-agent",
  version: "0.73.1",
  differs: false,
});
export default harness;
export const { CASES_DIR, PEER_PACKAGE, PEER_VERSION, listCases, loadCase, loadPeer, expectedPath, intendedPath } = harness;
