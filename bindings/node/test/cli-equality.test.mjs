// Every example send through the package gives the command line's bytes: the system text and the
// user slot of every target (`promptstack render --format json`), and the request body of every
// provider format (`promptstack render --target T --format F`). A send the command line refuses
// must make the package throw, and the other way round.
//
// The binary is target/debug/promptstack (PROMPTSTACK_BIN overrides it); build it with
// `cargo build -p promptstack-cli`.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Agent, PromptstackError } = require("../index.js");

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const BIN = process.env.PROMPTSTACK_BIN ?? join(ROOT, "target", "debug", "promptstack");
const FORMATS = ["anthropic", "openai-chat", "openai-responses", "gemini"];

/** Runs the command line; resolves with its exit code and raw stdout bytes. */
function cli(args) {
  return new Promise((resolve, reject) => {
    execFile(BIN, args, { cwd: ROOT, encoding: "buffer", maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ code: error ? error.code : 0, stdout, stderr: stderr.toString() });
    });
  });
}

/** Runs `jobs` (functions returning promises) two at a time, in order of the results. */
async function pool(jobs, width = 2) {
  const results = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        results[i] = await jobs[i]();
      }
    }),
  );
  return results;
}

/** Every example with a spec and sends: `{ name, spec, sends: [relative paths] }`. */
function examples() {
  const dir = join(ROOT, "examples");
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, "agent.toml")) && existsSync(join(dir, e.name, "sends")))
    .map((e) => ({
      name: e.name,
      spec: `examples/${e.name}/agent.toml`,
      sends: readdirSync(join(dir, e.name, "sends"))
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => `examples/${e.name}/sends/${f}`),
    }));
}

const outcome = (fn) => {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (!(error instanceof PromptstackError)) throw error;
    return { ok: false, error };
  }
};

test("the promptstack binary is built", () => {
  assert.ok(existsSync(BIN), `${BIN} is missing: cargo build -p promptstack-cli`);
});

for (const example of examples()) {
  test(`${example.name}: every send gives the command line's texts and request bodies`, async (t) => {
    assert.ok(example.sends.length > 0);
    const agent = Agent.fromPath(join(ROOT, example.spec));
    const targets = agent.targets;
    let compared = 0;
    let refused = 0;
    for (const send of example.sends) {
      const sendText = readFileSync(join(ROOT, send), "utf8");
      const assembly = outcome(() => agent.assemble(sendText));
      const jobs = [() => cli(["render", example.spec, "--send", send, "--format", "json"])];
      // Every format, each with one target in turn, so a spec with several targets has each
      // of them built as a request. A send without a user message has nothing to send: one
      // format shows that both sides refuse it.
      const formats = "user_message" in JSON.parse(sendText) ? FORMATS : FORMATS.slice(0, 1);
      formats.forEach((format, i) => {
        const target = targets[i % targets.length];
        jobs.push(() => cli(["render", example.spec, "--send", send, "--target", target, "--format", format]));
      });
      const [texts, ...bodies] = await pool(jobs);

      assert.equal(texts.code === 0, assembly.ok, `${send}: the command line exited ${texts.code} (${texts.stderr.trim()}), the package ${assembly.ok ? "assembled" : `threw ${assembly.error}`}`);
      if (!assembly.ok) continue;
      const rendered = JSON.parse(texts.stdout.toString("utf8"));
      assert.equal(rendered.fingerprint, assembly.value.fingerprint, `${send}: fingerprint`);
      assert.deepEqual(
        rendered.targets.map((t) => t.target),
        targets,
        `${send}: the targets`,
      );
      for (const expected of rendered.targets) {
        const composition = assembly.value.compose(expected.target);
        assert.ok(composition.system === expected.system, `${send} ${expected.target}: system text`);
        assert.ok(composition.user === expected.user, `${send} ${expected.target}: user slot`);
        compared += 2;
      }
      formats.forEach((format, i) => {
        const target = targets[i % targets.length];
        const result = bodies[i];
        const body = outcome(() => assembly.value.requestJson(format, { target }));
        assert.equal(result.code === 0, body.ok, `${send} ${format} ${target}: the command line exited ${result.code} (${result.stderr.trim()}), the package ${body.ok ? "built a request" : `threw ${body.error}`}`);
        if (body.ok) {
          assert.ok(Buffer.from(body.value, "utf8").equals(result.stdout), `${send} ${format} ${target}: request body bytes`);
          compared++;
        } else {
          refused++;
        }
      });
    }
    t.diagnostic(`${compared} texts and bodies equal, ${refused} requests refused by both`);
    assert.ok(compared > 0, "something was compared");
  });
}

test("a conversation gives the command line's request body", async () => {
  const spec = "examples/coding-agent/agent.toml";
  const sends = readdirSync(join(ROOT, "examples/coding-agent/sends")).sort();
  const send = `examples/coding-agent/sends/${sends[0]}`;
  const conversationPath = "crates/promptstack-cli/tests/data/conversations/tool-turn.json";
  const conversation = JSON.parse(readFileSync(join(ROOT, conversationPath), "utf8"));
  const assembly = Agent.fromPath(join(ROOT, spec)).assemble(readFileSync(join(ROOT, send)));
  for (const format of FORMATS) {
    const result = await cli(["render", spec, "--send", send, "--format", format, "--conversation", conversationPath]);
    assert.equal(result.code, 0, result.stderr);
    const body = assembly.requestJson(format, { conversation });
    assert.ok(Buffer.from(body, "utf8").equals(result.stdout), `${format}: request body bytes`);
    assert.deepEqual(assembly.request(format, { conversation: JSON.stringify(conversation) }), JSON.parse(body));
  }
});
