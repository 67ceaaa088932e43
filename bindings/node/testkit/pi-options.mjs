// Seeded inputs for the buildSystemPrompt drop-in's tests against the peer: option objects drawn
// from the parity domain of each version's PEER.md, and in-place edits of an options object.
// (Outside test/, which node's test runner collects whole.)

/** A seeded generator of numbers in [0, 1) (the same recurrence as peer/spec-check.mjs). */
export function random(seed) {
  let state = seed >>> 0;
  return () => ((state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
}

/** Each version's domain: the atoms strings are built from, the tool names drawn, and 1.6.0's own options. */
const DOMAINS = {
  // Whitespace the two trims treat differently, XML specials, entities, backslashes, astral
  // characters, newlines; tool lists with duplicates and near-misses; guidelines equal to the
  // fixed ones.
  "0.73.1": {
    atoms: [
      "", " ", "\n", "\t", "\r\n", "\u00a0", "\ufeff", "\u0085", "\u180e", "\u200b", "\u3000", "\u2028", "\u2029", "\u000b",
      "a", "Be concise in your responses", "Show file paths clearly when working with files",
      "Use bash for file operations like ls, rg, find",
      "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
      "&", "<", ">", '"', "'", "&amp;", "&lt;", "\\", "/", "C:\\Users\\dev", "\\\\server\\share", "é", "😀", "x y",
      "{{ x }}", "{% if %}", "# Project Context", "</available_skills>", "\n\n", "-", "`code`",
    ],
    toolNames: ["read", "bash", "edit", "write", "grep", "find", "ls", "ipython", "web", "READ", "Read", "read ", "custom_tool"],
    packageName: "@mariozechner/pi-coding-agent",
    sectionNames: null,
  },
  // Adds end tags of the enclosing elements, both shells, hidden tools, rules per tool, sections
  // that replace built-in ones or add their own, and a forced prompt.
  "1.6.0": {
    atoms: [
      "", " ", "\n", "\t", "\r\n", "\u00a0", "\ufeff", "\u0085", "\u180e", "\u200b", "\u3000", "\u2028", "\u000b",
      "a", "Be concise in your responses", "Show file paths clearly when working with files",
      "Use bash for file operations like ls, rg, find", "Use PowerShell for file operations like listing, searching, and finding files",
      "&", "<", ">", '"', "'", "&amp;", "&lt;", "\\", "/", "C:\\Users\\dev", "\\\\server\\share", "é", "😀", "x y",
      "{{ x }}", "{% if %}", "</available_skills>", "\n\n", "-", "`code`",
      "</project_instructions>", "</project_context>", "</PROJECT_CONTEXT", "</ project_instructions ", "</project_instructions_x>", "</cwd>",
    ],
    toolNames: ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls", "web", "READ", "read ", "custom_tool"],
    packageName: "@earendil-works/pi-coding-agent",
    sectionNames: ["tools", "rules", "docs", "addendum", "project_context", "skills", "cwd", "notes", "a-b_1", "zz"],
  },
};

/**
 * A seeded generator of cases `{ nowMs, packageDir, options }` for `version` ("0.73.1" or
 * "1.6.0"): context files, skills shown and hidden, and absent, null or empty options, over the
 * version's domain.
 */
export function optionsGenerator(version, seed) {
  const { atoms, toolNames, packageName, sectionNames } = DOMAINS[version];
  const v16 = sectionNames !== null;
  const rnd = random(seed);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const str = (max = 4) => Array.from({ length: Math.floor(rnd() * max) }, () => pick(atoms)).join("");
  const maybe = (f) => (rnd() < 0.4 ? undefined : rnd() < 0.15 ? null : f());
  const list = (f, max = 4) => Array.from({ length: Math.floor(rnd() * max) }, f);
  const CWDS = ["/home/dev/project", "C:\\work\\repo", "\\\\server\\share\\x", "", " ", "/", "relative/dir", "/tmp/with space/ü"];
  return () => {
    const o = { cwd: rnd() < 0.5 ? pick(CWDS) : str(6) };
    const set = (key, value) => value !== undefined && (o[key] = value);
    if (v16 && rnd() < 0.05) o.forceSystemPrompt = str(6);
    set("customPrompt", maybe(() => (rnd() < 0.3 ? "" : str(6))));
    set("selectedTools", maybe(() => list(() => pick(toolNames), 6)));
    if (v16) set("hiddenTools", maybe(() => list(() => pick(toolNames), 3)));
    set("toolSnippets", maybe(() => Object.fromEntries(list(() => [pick(toolNames), str()], 6))));
    if (v16) set("toolGuidelines", maybe(() => Object.fromEntries(list(() => [pick(toolNames), list(str, 3)], 5))));
    set("promptGuidelines", maybe(() => list(str, 5)));
    set("appendSystemPrompt", maybe(() => str(6)));
    if (v16) set("sections", maybe(() => Object.fromEntries(list(() => [pick(sectionNames), rnd() < 0.2 ? "" : str(4)], 4))));
    set("contextFiles", maybe(() => list(() => ({ path: str(), content: str(8) }))));
    set(
      "skills",
      maybe(() =>
        list(() => ({
          name: str(),
          description: str(),
          filePath: str(),
          ...(rnd() < 0.5 ? { disableModelInvocation: rnd() < 0.5 } : {}),
          ...(rnd() < 0.2 ? { baseDir: str(), sourceInfo: { source: "user" } } : {}),
        })),
      ),
    );
    if (rnd() < 0.1) o.ignoredOption = str();
    const nowMs = Date.UTC(1000 + Math.floor(rnd() * 9000), 0, 1) + Math.floor(rnd() * 366 * 86400000);
    const packageDir = pick(["/opt/pi", `/usr/lib/node_modules/${packageName}`, "/home/dev/.npm-global/lib/node_modules/pi"]);
    return { nowMs, packageDir, options: o };
  };
}

/** Tool names and texts the in-place edits draw from. */
export const TOOLS = ["read", "bash", "edit", "write", "grep", "ls", "custom_tool"];
export const WORDS = ["", "a", "Be concise in your responses", " spaced ", "<x>", "&amp;", "é😀", "line\nbreak"];

/** Edits that change one member of a 0.73.1 options object in place, deep or at the top. */
export function edits073(rnd) {
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  return [
    (o) => (o.cwd = pick(["/w", "/elsewhere", "C:\\work", "\\\\server\\share"])),
    (o) => (o.customPrompt = pick([undefined, null, "", "custom", "other custom"])),
    (o) => (o.selectedTools = rnd() < 0.2 ? undefined : [pick(TOOLS), pick(TOOLS)]),
    (o) => (o.selectedTools ??= []).push(pick(TOOLS)),
    (o) => o.selectedTools?.length && (o.selectedTools[0] = pick(TOOLS)),
    (o) => ((o.toolSnippets ??= {})[pick(TOOLS)] = pick(WORDS)),
    (o) => o.toolSnippets && delete o.toolSnippets[pick(TOOLS)],
    (o) => (o.promptGuidelines ??= []).push(pick(WORDS)),
    (o) => o.promptGuidelines?.length && (o.promptGuidelines[o.promptGuidelines.length - 1] = pick(WORDS)),
    (o) => (o.appendSystemPrompt = pick([undefined, "", "appended", "more"])),
    (o) => (o.contextFiles ??= []).push({ path: `/w/${pick(WORDS)}.md`, content: pick(WORDS) }),
    (o) => o.contextFiles?.length && (o.contextFiles[0].content += pick(WORDS)),
    (o) => o.contextFiles?.length && (o.contextFiles[0].path = `/p/${pick(WORDS)}`),
    (o) => o.contextFiles?.pop(),
    (o) => (o.skills ??= []).push({ name: pick(["s", "t"]), description: pick(WORDS), filePath: "/s/SKILL.md" }),
    (o) => o.skills?.length && (o.skills[0].disableModelInvocation = !o.skills[0].disableModelInvocation),
    (o) => o.skills?.length && (o.skills[o.skills.length - 1].description = pick(WORDS)),
    (o) => o.skills?.length && (o.skills[0].name = pick(["renamed", "s"])),
  ];
}
