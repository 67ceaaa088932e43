// The parity cases of @earendil-works/pi-coding-agent@1.6.0 (see kit/cases.mjs in examples/pi-compat/peer):
// finds them, pins the clock and the package directory, and calls the peer's buildSystemPrompt.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { caseHarness } from "../../pi-compat/peer/kit/cases.mjs";

export { enterCase, escapeContext, render } from "../../pi-compat/peer/kit/cases.mjs";

const harness = caseHarness({
  peerDir: dirname(fileURLToPath(import.meta.url)),
  packageName: "@earendil-works/pi-coding-agent",
  version: "1.6.0",
  differs: true,
});
export default harness;
export const { CASES_DIR, PEER_PACKAGE, PEER_VERSION, listCases, loadCase, loadPeer, expectedPath, intendedPath } = harness;
