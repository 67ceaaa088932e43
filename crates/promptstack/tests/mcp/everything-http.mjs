// Starts @modelcontextprotocol/server-everything's streamable HTTP transport on 127.0.0.1 only.
//
// The package listens with `app.listen(PORT)`, i.e. on every interface. The tests must stay on
// loopback, so this launcher pins every listening socket to 127.0.0.1 before the server starts.
// With PORT=0 the system picks a free port; the launcher reports it on stderr as
// `promptstack-test listening on 127.0.0.1:<port>` for the test to read.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const port = Number(args[0]);
    const callback = args.find((a) => typeof a === "function");
    args = callback ? [port, "127.0.0.1", callback] : [port, "127.0.0.1"];
  }
  this.once("listening", () => {
    const address = this.address();
    process.stderr.write(`promptstack-test listening on ${address.address}:${address.port}\n`);
  });
  return listen.apply(this, args);
};

await import("./node_modules/@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js");
