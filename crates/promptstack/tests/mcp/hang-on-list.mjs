// An MCP server over stdio that completes the handshake and then never answers tools/list.
import readline from "node:readline";

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.method === "initialize") {
    const reply = {
      jsonrpc: "2.0",
      id: message.id,
      result: {
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "hang-on-list", version: "1.0.0" },
      },
    };
    process.stdout.write(JSON.stringify(reply) + "\n");
  }
  // Every other request is left unanswered on purpose.
});
