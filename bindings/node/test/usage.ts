// Type-checked by api.test.mjs against index.d.ts: a program using the public API as documented.
import {
  Agent,
  AssemblyError,
  buildSystemPrompt,
  PI_VERSIONS,
  checkFence,
  CiteStream,
  fence,
  SpecError,
  type Composition,
  type Diagnostic,
  type Widget,
  type WidgetEvent,
} from "../index.js";

const agent: Agent = Agent.fromSource("spec_version = 1", { format: "toml", name: "a.toml" });
const assembly = agent.assemble({ now: "2026-11-30T09:15:00Z" });
const composition: Composition = assembly.compose("chat");
const system: string = composition.system + composition.user;
const body: Record<string, unknown> = assembly.request("anthropic", { conversation: { messages: [] }, target: "chat" });
const exact: string = assembly.requestJson("gemini", { maxTokens: 10 });
const findings = agent.lint([{ now: "2026-11-30T09:15:00Z" }]);
const first: number | undefined = findings[0]?.send;
const fenced = fence("text", { kind: "page", origin: "https://example.org" });
const valid: boolean = checkFence(fenced.text).valid;
const stream = new CiteStream([{ index: 1, url: "https://example.org" }], { mode: "placeholders" });
const shown: string = stream.feed("a [1]") + stream.finish();
const keys: number[] = stream.citations.map((c) => c.key);
const widgetStream = new CiteStream([], { widgets: ["widget:map"] });
widgetStream.feed("<widget:map data='x");
const loadingAt: number | undefined = widgetStream.loading?.offset;
const events: WidgetEvent[] = widgetStream.takeWidgetEvents();
for (const event of events) {
  if (event.type === "widget") console.log(event.attributes["data"], event.offset);
  else console.log(event.type, event.name, event.offset);
}
const removed: Widget[] = widgetStream.takeWidgets();
const prompt: string = buildSystemPrompt({ cwd: "/w", selectedTools: ["read"] }, { packageDir: "/opt/pi" });
const prompt16: string = buildSystemPrompt({ cwd: "/w", hiddenTools: ["bash"], toolGuidelines: { read: ["Read first"] }, sections: { notes: "n" } }, { version: "1.6.0" });
const versions: readonly string[] = PI_VERSIONS;
try {
  Agent.fromPath("agent.toml");
} catch (error) {
  if (error instanceof SpecError || error instanceof AssemblyError) {
    const diagnostics: Diagnostic[] = error.diagnostics;
    console.log(diagnostics.map((d) => `${d.code} ${d.location?.line ?? "?"}`));
  }
}
console.log(system, body, exact, first, valid, shown, keys, loadingAt, removed, prompt, prompt16, versions, assembly.blocks[0]?.id, assembly.fingerprint);
