// The parity cases of one pinned peer version: finds them, validates their inputs, pins the clock
// and the package directory, and calls the peer's buildSystemPrompt. Each version's
// `peer/harness.mjs` is this module bound to its own directory and package
// (`caseHarness({ ... })`); generate, bench and large run over such a harness.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { pathToFileURL } from "node:url";

// The peer formats the date with local-time getters, so the fixtures are made in UTC (a version
// that prints no date keeps it too; the equality tests run it in other zones). Node re-reads TZ
// when it is assigned, so this also covers a caller that forgot `TZ=UTC`.
process.env.TZ = "UTC";

// `new Date()` with no argument is the only clock read in the peer; everything else keeps real
// Date behaviour. A version that reads no clock keeps it pinned, so that a clock read would fail
// loudly instead of passing by chance.
const RealDate = Date;
let fixedNowMs = null;
class FixedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) {
      if (fixedNowMs === null) throw new Error("clock read before a case set it");
      super(fixedNowMs);
    } else {
      super(...args);
    }
  }
  static now() {
    if (fixedNowMs === null) throw new Error("clock read before a case set it");
    return fixedNowMs;
  }
}
globalThis.Date = FixedDate;

const NOW_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/**
 * The harness of one peer version.
 * - `peerDir`: the version's `peer/` directory (its `node_modules` holds the pinned peer; its
 *   cases are in `../cases`);
 * - `packageName`: the peer's npm name, `version`: the version pinned in its lockfile;
 * - `differs`: whether a case may say (`"differs": "why"`) that promptstack renders its context
 *   files escaped, where the peer does not (see `escapeContext`).
 */
export function caseHarness({ peerDir, packageName, version, differs }) {
  const CASES_DIR = join(peerDir, "..", "cases");
  const packageRoot = join(peerDir, "node_modules", ...packageName.split("/"));
  const topLevelKeys = new Set(["note", "now", "packageDir", "options", "sameAs", ...(differs ? ["differs"] : [])]);

  /** Names of all case directories that contain an input.json, sorted. */
  function listCases() {
    return readdirSync(CASES_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(CASES_DIR, e.name, "input.json")))
      .map((e) => e.name)
      .sort();
  }

  /** Reads and validates one case; throws with the case name on a malformed input. */
  function loadCase(name) {
    const input = JSON.parse(readFileSync(join(CASES_DIR, name, "input.json"), "utf8"));
    const fail = (msg) => {
      throw new Error(`${name}: ${msg}`);
    };
    if (typeof input !== "object" || input === null || Array.isArray(input)) fail("input must be an object");
    for (const key of Object.keys(input)) if (!topLevelKeys.has(key)) fail(`unknown top-level key ${key}`);
    if (typeof input.now !== "string" || !NOW_RE.test(input.now)) fail("now must be YYYY-MM-DDTHH:MM:SS[.sss]Z");
    const nowMs = RealDate.parse(input.now);
    if (Number.isNaN(nowMs) || new RealDate(nowMs).toISOString().slice(0, 19) !== input.now.slice(0, 19)) fail("now is not a real instant");
    const pd = input.packageDir;
    if (typeof pd !== "string" || !pd.startsWith("/") || posix.normalize(pd) !== pd || (pd.length > 1 && pd.endsWith("/")))
      fail("packageDir must be a normalised absolute POSIX path without a trailing slash");
    if (typeof input.options !== "object" || input.options === null) fail("options must be an object");
    if (input.differs !== undefined && typeof input.differs !== "string") fail("differs must be a string saying why");
    return { name, nowMs, packageDir: pd, options: input.options, sameAs: input.sameAs, differs: input.differs };
  }

  /** Imports the peer function by file path (it is not exported from the package root). */
  async function loadPeer() {
    const found = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")).version;
    if (found !== version) throw new Error(`peer is ${found}, expected ${version}; run npm ci`);
    // The peer reads its own package.json at import time through PI_PACKAGE_DIR, so the
    // override must only be set after the import has finished.
    delete process.env.PI_PACKAGE_DIR;
    const mod = await import(pathToFileURL(join(packageRoot, "dist", "core", "system-prompt.js")).href);
    const jan = new RealDate(RealDate.UTC(2026, 0, 15)).getTimezoneOffset();
    const jul = new RealDate(RealDate.UTC(2026, 6, 15)).getTimezoneOffset();
    if (jan !== 0 || jul !== 0) throw new Error("process is not running in UTC");
    return mod.buildSystemPrompt;
  }

  return {
    CASES_DIR,
    PEER_PACKAGE: packageName,
    PEER_VERSION: version,
    differs,
    listCases,
    loadCase,
    loadPeer,
    enterCase,
    render,
    escapeContext,
    expectedPath: (name) => join(CASES_DIR, name, "expected.txt"),
    /** Where a case that `differs` keeps the bytes promptstack renders instead (see `escapeContext`). */
    intendedPath: (name) => join(CASES_DIR, name, "intended.txt"),
  };
}

/** Pins the clock and the documentation directory for one case. */
export function enterCase(c) {
  fixedNowMs = c.nowMs;
  if (process.env.PI_PACKAGE_DIR !== c.packageDir) process.env.PI_PACKAGE_DIR = c.packageDir;
}

/** Renders one case with the peer. */
export function render(buildSystemPrompt, c) {
  enterCase(c);
  return buildSystemPrompt(c.options);
}

/**
 * The options with every context file as promptstack places it: the path XML-escaped
 * (`& < > " '`) and, in the content, each end tag of `project_instructions` or
 * `project_context` written with `&lt;` for its `<` (any ASCII case, ASCII whitespace allowed
 * after `</`, not followed by a byte that would continue the name). The peer given these options
 * returns exactly what promptstack returns for the original ones: that is the whole intended
 * difference, and the tests check it on the peer's own bytes.
 */
export function escapeContext(options) {
  if (!Array.isArray(options.contextFiles)) return options;
  return {
    ...options,
    contextFiles: options.contextFiles.map((file) => ({
      ...file,
      path: typeof file.path === "string" ? escapeXml(file.path) : file.path,
      content: typeof file.content === "string" ? escapeEndTags(file.content) : file.content,
    })),
  };
}

export function escapeXml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

const END_TAG = /<(\/[\t\n\f\r ]*(?:project_instructions|project_context)(?![A-Za-z0-9_.:-]))/gi;

export function escapeEndTags(text) {
  return text.replace(END_TAG, "&lt;$1");
}
