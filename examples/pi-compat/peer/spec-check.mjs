// Checks that PEER.md is a complete description of the peer: an independent model built
// only from PEER.md (its fixed text is read from the document's tagged code blocks) must
// reproduce every expected.txt and agree with the peer on randomly generated inputs.
// Usage: TZ=UTC node spec-check.mjs [random-inputs, default 20000]
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { enterCase, expectedPath, listCases, loadCase, loadPeer } from "./harness.mjs";

const doc = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "PEER.md"), "utf8");
function block(tag) {
  const m = doc.match(new RegExp("```text " + tag + "\\n([\\s\\S]*?)\\n```"));
  if (!m) throw new Error(`PEER.md has no block ${tag}`);
  return m[1];
}
const DEFAULT_BASE = block("default-base");
const SKILLS_PREAMBLE = block("skills-preamble");

// §4: the whitespace set of the peer's trim, as listed in PEER.md.
const WS = new Set([0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff]);
for (let c = 0x2000; c <= 0x200a; c++) WS.add(c);
function trim(s) {
  const cps = [...s];
  let a = 0;
  let b = cps.length;
  while (a < b && WS.has(cps[a].codePointAt(0))) a++;
  while (b > a && WS.has(cps[b - 1].codePointAt(0))) b--;
  return cps.slice(a, b).join("");
}
const esc = (s) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;").replaceAll("'", "&apos;");
const present = (s) => typeof s === "string" && s.length > 0;

function model(o, nowIso, packageDir) {
  const custom = present(o.customPrompt);
  const sel = Array.isArray(o.selectedTools) ? o.selectedTools : null;
  let base;
  let gate;
  if (custom) {
    base = o.customPrompt;
    gate = sel === null || sel.includes("read");
  } else {
    const tools = sel ?? ["read", "bash", "edit", "write"];
    const snippets = o.toolSnippets ?? {};
    const shown = tools.filter((n) => Object.hasOwn(snippets, n) && present(snippets[n]));
    const toolsText = shown.length ? shown.map((n) => `- ${n}: ${snippets[n]}`).join("\n") : "(none)";
    const list = [];
    const add = (g) => list.includes(g) || list.push(g);
    const has = (n) => tools.includes(n);
    if (has("bash") && !has("grep") && !has("find") && !has("ls")) add("Use bash for file operations like ls, rg, find");
    else if (has("bash")) add("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)");
    for (const g of o.promptGuidelines ?? []) if (trim(g)) add(trim(g));
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    base = DEFAULT_BASE.replace("{{TOOLS}}", () => toolsText)
      .replace("{{GUIDELINES}}", () => list.map((g) => `- ${g}`).join("\n"))
      .replace("{{README}}", () => `${packageDir}/README.md`)
      .replace("{{DOCS}}", () => `${packageDir}/docs`)
      .replace("{{EXAMPLES}}", () => `${packageDir}/examples`);
    gate = has("read");
  }
  const append = present(o.appendSystemPrompt) ? `\n\n${o.appendSystemPrompt}` : "";
  const files = o.contextFiles ?? [];
  const context = files.length
    ? "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n" + files.map((f) => `## ${f.path}\n\n${f.content}\n\n`).join("")
    : "";
  const visible = (o.skills ?? []).filter((s) => s.disableModelInvocation !== true);
  const skills =
    gate && visible.length
      ? "\n\n" +
        [SKILLS_PREAMBLE, ...visible.map((s) => `  <skill>\n    <name>${esc(s.name)}</name>\n    <description>${esc(s.description)}</description>\n    <location>${esc(s.filePath)}</location>\n  </skill>`), "</available_skills>"].join("\n")
      : "";
  return base + append + context + skills + `\nCurrent date: ${nowIso.slice(0, 10)}\nCurrent working directory: ${o.cwd.replaceAll("\\", "/")}`;
}

let failures = 0;
for (const name of listCases()) {
  const c = loadCase(name);
  const got = model(c.options, new Date(c.nowMs).toISOString(), c.packageDir);
  if (got !== readFileSync(expectedPath(name), "utf8")) {
    console.error(`FAIL fixture ${name}`);
    failures++;
  }
}

// Random inputs drawn from the parity domain of PEER.md, with a seeded generator.
const peer = await loadPeer();
let seed = 0x9e3779b9;
const rnd = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const ATOMS = ["", " ", "\n", "\t", "\r\n", "\u00a0", "\ufeff", "\u0085", "\u180e", "\u200b", "\u3000", "\u2028", "a", "Be concise in your responses", "Use bash for file operations like ls, rg, find", "&", "<", ">", '"', "'", "&amp;", "\\", "/", "é", "😀", "x y"];
const str = () => Array.from({ length: Math.floor(rnd() * 4) }, () => pick(ATOMS)).join("");
const TOOL_NAMES = ["read", "bash", "edit", "write", "grep", "find", "ls", "ipython", "web", "READ"];
const maybe = (f) => (rnd() < 0.5 ? undefined : rnd() < 0.15 ? null : f());
const list = (f) => Array.from({ length: Math.floor(rnd() * 4) }, f);
const runs = Number(process.argv[2] ?? 20000);
for (let i = 0; i < runs; i++) {
  const o = { cwd: str() };
  const set = (k, v) => v !== undefined && (o[k] = v);
  set("customPrompt", maybe(str));
  set("selectedTools", maybe(() => list(() => pick(TOOL_NAMES))));
  set("toolSnippets", maybe(() => Object.fromEntries(list(() => [pick(TOOL_NAMES), str()]))));
  set("promptGuidelines", maybe(() => list(str)));
  set("appendSystemPrompt", maybe(str));
  set("contextFiles", maybe(() => list(() => ({ path: str(), content: str() }))));
  set("skills", maybe(() => list(() => ({ name: str(), description: str(), filePath: str(), ...(rnd() < 0.5 ? { disableModelInvocation: rnd() < 0.5 } : {}) }))));
  const nowMs = Date.UTC(1000 + Math.floor(rnd() * 9000), 0, 1) + Math.floor(rnd() * 366 * 86400000);
  const c = { nowMs, packageDir: pick(["/opt/pi", "/usr/lib/node_modules/@mariozechner/pi-coding-agent"]), options: o };
  enterCase(c);
  const want = peer(o);
  const got = model(o, new Date(nowMs).toISOString(), c.packageDir);
  if (want !== got) {
    if (failures++ < 5) console.error(`FAIL random input ${JSON.stringify(o)}\nwant ${JSON.stringify(want)}\n got ${JSON.stringify(got)}`);
  }
}
console.error(failures ? `${failures} failure(s)` : `ok: ${listCases().length} fixtures and ${runs} random inputs agree with PEER.md`);
process.exit(failures ? 1 : 0);
