// An MCP server over stdio that completes the handshake and then misbehaves on tools/list, as
// chosen by its first argument:
//   endless-pages  every page holds one tool and a next cursor, forever;
//   many-tools     every page holds 500 tools and a next cursor, forever;
//   huge-tools     every page holds one tool with a 1 MiB description and a next cursor, forever.
import readline from "node:readline";

const mode = process.argv[2] ?? "endless-pages";
const description = mode === "huge-tools" ? "x".repeat(1024 * 1024) : "A tool.";
const perPage = mode === "many-tools" ? 500 : 1;
let served = 0;

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const message = JSON.parse(line);
  let result;
  if (message.method === "initialize") {
    result = {
      protocolVersion: message.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: `misbehave-${mode}`, version: "1.0.0" },
    };
  } else if (message.method === "tools/list") {
    const tools = [];
    for (let i = 0; i < perPage; i++) {
      served += 1;
      tools.push({
        name: `tool_${served}`,
        description,
        inputSchema: { type: "object", properties: {} },
      });
    }
    result = { tools, nextCursor: `page-${served}`, ttlMs: 3600000 };
  } else if (message.id !== undefined) {
    result = {};
  } else {
    return;
  }
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }) + "\n");
});
