// Writes cases/large/input.json: the benchmark's large case, generated deterministically so both
// sides read the same committed bytes. Every version's case has eight context files of 1–3 KB,
// twenty skills, ten guidelines, every built-in tool plus three more with snippets and an
// appended text, on the default path; a version adds the options it has of its own (`extra`).
// `--check` compares instead of writing.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const WORDS = (
  "build test module crate function return value error handle config server client request " +
  "response cache token prompt render stream parse write read file path branch commit review " +
  "check lint format deploy release version schema field record index query thread message"
).split(" ");

/**
 * Writes (or with `--check` in `argv`, checks) the large case of `harness`.
 * - `note`, `packageDir`: the input's own;
 * - `extra(text)`: the version's additional options, drawn from the same sequence after the
 *   guidelines (`text.sentence(n)`, `text.document(title, bytes)`, `text.next()`, `text.tools`);
 *   each is placed where the version's options list it (see `ORDER`).
 */
export function writeLarge(harness, { note, packageDir, extra = () => ({}) }, argv = process.argv) {
  // A small linear congruential generator: the same sequence on every run and every machine.
  let state = 18;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648);
  const pick = (xs) => xs[(next() >>> 16) % xs.length];
  const sentence = (n) => {
    const words = Array.from({ length: n }, () => pick(WORDS));
    return words[0][0].toUpperCase() + words.join(" ").slice(1) + ".";
  };
  /** Markdown of about `bytes` bytes: a heading, then bullet lines and paragraphs. */
  const document = (title, bytes) => {
    let text = `# ${title}\n\n`;
    let section = 1;
    while (text.length < bytes) {
      text += `## Section ${section++}\n\n`;
      for (let i = 0; i < 4 && text.length < bytes; i++) text += `- ${sentence(6 + (next() % 8))}\n`;
      text += `\n${sentence(10 + (next() % 10))} ${sentence(8 + (next() % 10))} Use \`make check\` & <b>review</b>.\n\n`;
    }
    return text;
  };

  const contextFiles = Array.from({ length: 8 }, (_, i) => ({
    path: i === 0 ? "/home/dev/.pi/agent/AGENTS.md" : `/home/dev/project/pkg${i}/AGENTS.md`,
    content: document(`Rules ${i + 1}`, 1024 + ((i * 293) % 2048)),
  }));
  const skills = Array.from({ length: 20 }, (_, i) => ({
    name: `skill-${String(i + 1).padStart(2, "0")}`,
    description: `${sentence(8 + (i % 7))} Handles "quoted" & <tagged> input.`,
    filePath: `/home/dev/project/.pi/skills/skill-${i + 1}/SKILL.md`,
    ...(i % 7 === 6 ? { disableModelInvocation: true } : {}),
  }));
  const tools = ["read", "bash", "edit", "write", "grep", "find", "ls", "web_fetch", "todo", "notes"];
  const toolSnippets = Object.fromEntries(tools.map((t) => [t, `${t}: ${sentence(6 + (next() % 6))}`]));
  const promptGuidelines = Array.from({ length: 10 }, (_, i) => `Guideline ${i + 1}: ${sentence(8 + (next() % 8))}`);
  const own = extra({ sentence, document, next, tools });
  const appendSystemPrompt = `\n${document("Team rules", 3000)}`;
  const all = { cwd: "/home/dev/project", selectedTools: tools, toolSnippets, promptGuidelines, appendSystemPrompt, contextFiles, skills, ...own };
  for (const key of Object.keys(own)) if (!ORDER.includes(key)) throw new Error(`large case: no place for option ${key}`);
  const options = Object.fromEntries(ORDER.filter((key) => key in all).map((key) => [key, all[key]]));

  const input = { note, now: "2026-03-14T09:26:53.000Z", packageDir, options };
  const dir = join(harness.CASES_DIR, "large");
  const file = join(dir, "input.json");
  const text = JSON.stringify(input, null, 2) + "\n";
  if (argv.includes("--check")) {
    if (!existsSync(file) || readFileSync(file, "utf8") !== text) {
      console.error("cases/large/input.json is stale; run node large.mjs");
      process.exit(1);
    }
  } else {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, text, "utf8");
    console.error(`wrote cases/large/input.json (${Buffer.byteLength(text)} bytes)`);
  }
}

/** The order of the options in the committed inputs. */
const ORDER = ["cwd", "selectedTools", "hiddenTools", "toolSnippets", "toolGuidelines", "promptGuidelines", "appendSystemPrompt", "contextFiles", "skills", "sections"];
