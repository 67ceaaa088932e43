// The public API of @promptstack/node. The native addon's own declarations (`native.d.ts`) are
// generated from src/lib.rs by build.mjs; the shapes shared with it are imported from there.
import type { ComposedText, Fenced, RequestOutput } from "./native";

export type { ComposedText, Fenced, RequestOutput };

/** A send context: an object, its JSON text, or UTF-8 bytes (see docs/spec.md, "send context"). */
export type SendInput = Record<string, unknown> | string | Uint8Array;

/** A provider request format. */
export type ProviderFormat = "anthropic" | "openai-chat" | "openai-responses" | "gemini";

/** Where a finding is in its source. */
export interface Location {
  line: number;
  column: number;
  [key: string]: unknown;
}

/** One finding: a stable code, a lowercase message, and where and how to fix it when known. */
export interface Diagnostic {
  severity?: "info" | "warning" | "error";
  code: string;
  message: string;
  /** The key path of the offending value (spec and send errors), like `blocks[2].template`. */
  path?: string;
  /** The block, tool or target the finding is about. */
  subject?: string;
  location?: Location;
  hint?: string;
  [key: string]: unknown;
}

/** A lint finding; `send` is the index of the send it is about. */
export interface Finding extends Diagnostic {
  send?: number;
}

/** One block of an assembly. */
export interface Block {
  id: string;
  kind: string;
  trust: string;
  stability: string;
  placement: string;
  origin: unknown;
  /** `"included"`, or the exclusion with its reason. */
  state: unknown;
  override: string;
  variant?: string;
  text: string;
  range?: { start: number; end: number };
  tokens: unknown;
  [key: string]: unknown;
}

/** One part of a composed text, naming the block it came from. */
export interface Part {
  [key: string]: unknown;
}

/** The texts one target sends; `parts`, `diagnostics` and `shed` are computed when first read. */
export declare class Composition implements ComposedText {
  private constructor();
  readonly target: string;
  readonly system: string;
  readonly user: string;
  readonly userPosition: string;
  readonly stablePrefix: number;
  readonly parts: Part[];
  readonly diagnostics: Diagnostic[];
  readonly shed: Record<string, unknown>[];
  toJSON(): Record<string, unknown>;
}

/** Options of a provider request. */
export interface RequestOptions {
  /** The conversation so far: `{ messages: [...] }`, or its JSON. */
  conversation?: Record<string, unknown> | string | null;
  /** The target (default: the spec's only target). */
  target?: string | null;
  /** The model id sent (default: the send's model id). */
  model?: string | null;
  /** The output token limit (default 4096). */
  maxTokens?: number | null;
  /** The expected seconds until the thread's next request (chooses cache lifetimes). */
  gapSeconds?: number | null;
  /** OpenAI `prompt_cache_key` (default: the agent name and the start of the fingerprint). */
  cacheKey?: string | null;
  /** Gemini: an explicit cached content (`cachedContents/…`) holding the system text and tools. */
  cachedContent?: string | null;
  /** A provider rules table (TOML text) replacing the bundled one. */
  rules?: string | null;
}

/** A compiled agent spec: load it once, assemble per send. */
export declare class Agent {
  private constructor();
  /** Reads and compiles a spec file (`.json` is JSON, anything else TOML), with its `capabilities/` manifests. */
  static fromPath(path: string | URL): Agent;
  /** Compiles a spec from its text. */
  static fromSource(text: string | Uint8Array, options?: { format?: "toml" | "json"; name?: string }): Agent;
  /** The agent's name. */
  readonly name: string;
  /** The ids of the spec's targets. */
  readonly targets: string[];
  /** Assembles one send. */
  assemble(send: SendInput): Assembly;
  /** The spec's lint findings, then those of each send (assembled, every target composed). */
  lint(sends?: SendInput[]): Finding[];
  /** What `promptstack explain --json` reports for one send. */
  explain(send: SendInput, options?: { target?: string; format?: ProviderFormat }): Record<string, unknown>;
}

/** One send's assembly. */
export declare class Assembly {
  private constructor();
  /** The stable half of the body text. */
  readonly stable: string;
  /** The volatile half of the body text. */
  readonly volatile: string;
  /** The whole body text. */
  readonly full: string;
  /** The fingerprint of the stable inputs and text (hex). */
  readonly fingerprint: string;
  /** The targets this assembly can compose. */
  readonly targets: string[];
  /** Every block, included or not. */
  readonly blocks: Block[];
  /** The findings of assembling. */
  readonly diagnostics: Diagnostic[];
  /** The texts one target sends. */
  compose(target: string): Composition;
  /** The provider request body, as an object. */
  request(format: ProviderFormat, options?: RequestOptions): Record<string, unknown>;
  /** The provider request body, byte for byte as it is sent. */
  requestJson(format: ProviderFormat, options?: RequestOptions): string;
  /** The request with its cache plan (`body` is the exact JSON text). */
  plan(format: ProviderFormat, options?: RequestOptions): RequestOutput;
  /** The assembly JSON (`promptstack.assembly/v1`). */
  toJSON(): Record<string, unknown>;
}

/** The kinds of untrusted content the fence wraps. */
export type ContentKind = "page" | "selection" | "file" | "mcp-resource" | "tool-result";

/** Wraps untrusted content in a fence with a fresh nonce. */
export declare function fence(
  content: string,
  options: { kind: ContentKind; origin?: string | null; tool?: string | null; maxBytes?: number | null },
): Fenced;

/** The result of checking a fence. */
export interface FenceCheck {
  valid: boolean;
  fence: { kind: string; nonce: string; origin: string | null; tool: string | null; body: string } | null;
  /**
   * What is wrong, each `kind` one of `too-short`, `bad-opening`, `bad-closing`, `mismatch`,
   * `nonce-count`, `marker-in-body`, `control-token-in-body`, `hostile-attribute`.
   */
  problems: { kind: string; offset: number | null; message: string }[];
}

/** Checks that `text` is exactly one valid fence. */
export declare function checkFence(text: string): FenceCheck;

/** A source the model may cite. */
export interface Source {
  index: number;
  url: string;
  title?: string | null;
}

/** One citation run of the map. */
export interface Citation {
  key: number;
  placeholder: string;
  sources: number[];
}

/** The model's streamed text through the citation and math processor. */
export declare class CiteStream {
  constructor(
    sources: Source[] | { sources: Source[] } | string,
    options?: { mode?: "placeholders" | "links"; widgets?: string[] },
  );
  /** Feeds a delta; returns the display-ready text decided so far. */
  feed(delta: string): string;
  /** Ends the stream; returns the rest of the text. */
  finish(): string;
  /** The citation map. */
  readonly citations: Citation[];
  /** Resolved and unresolved citation counts so far. */
  readonly score: Record<string, unknown>;
  /** The widget tags removed from the text since the last call (empties the queue `takeWidgetEvents` reads). */
  takeWidgets(): Widget[];
  /** The widget events decided since the last call, in order: starts, widgets and cancels. */
  takeWidgetEvents(): WidgetEvent[];
  /** The widget whose tag is streaming now (its offset is where the text so far ends), or null. */
  readonly loading: WidgetStart | null;
}

/** A widget tag removed from the text: its name as declared, attributes, and where it stood. */
export interface Widget {
  name: string;
  attributes: Record<string, string>;
  /** The byte offset in the whole output where the tag stood. */
  offset: number;
}

/** A declared widget whose tag is streaming, and where it stands in the output. */
export interface WidgetStart {
  name: string;
  offset: number;
}

/** What the stream decided about a widget tag, as `promptstack cite --json` prints it. */
export type WidgetEvent =
  | ({ type: "widget_start" } & WidgetStart)
  | ({ type: "widget" } & Widget)
  | ({ type: "widget_cancel" } & WidgetStart);

/** The options object of `buildSystemPrompt` in @mariozechner/pi-coding-agent@0.73.1. */
export interface BuildSystemPromptOptions {
  cwd: string;
  customPrompt?: string | null;
  selectedTools?: string[] | null;
  toolSnippets?: Record<string, string> | null;
  promptGuidelines?: string[] | null;
  appendSystemPrompt?: string | null;
  contextFiles?: { path: string; content: string }[] | null;
  skills?: { name: string; description: string; filePath: string; disableModelInvocation?: boolean; [key: string]: unknown }[] | null;
  [key: string]: unknown;
}

/** The options object of `buildSystemPrompt` in @earendil-works/pi-coding-agent@1.6.0. */
export interface BuildSystemPromptOptions16 extends BuildSystemPromptOptions {
  /** The whole prompt, as given; nothing else is read (`cwd` may then be left out). */
  forceSystemPrompt?: string;
  /** Selected tools left out of the tool list, the rules and the skills hint. */
  hiddenTools?: string[] | null;
  /** Rules contributed by each declared tool (at most 64 declared tools may have some). */
  toolGuidelines?: Record<string, string[]> | null;
  /** Sections of the caller's own, by tag name, in key order. */
  sections?: Record<string, string> | null;
}

/** The versions of the coding agent whose builder `buildSystemPrompt` reproduces. */
export declare const PI_VERSIONS: readonly ["0.73.1", "1.6.0"];

/** The second argument of `buildSystemPrompt`. */
export interface BuildSystemPromptSettings {
  /** The version to reproduce; without it, the one installed where the process runs (else 0.73.1). */
  version?: "0.73.1" | "1.6.0";
  /** Where the documentation paths point (otherwise `PI_PACKAGE_DIR`, otherwise this package's directory). */
  packageDir?: string;
}

/**
 * Byte for byte what `buildSystemPrompt(options)` of @mariozechner/pi-coding-agent@0.73.1 or
 * @earendil-works/pi-coding-agent@1.6.0 returns (`settings.version`, else the installed one).
 * For 0.73.1 the date is today's in the process's time zone (`new Date()`, like the original);
 * 1.6.0 prints no date, and its context files are escaped so none can close its tag. An options
 * object passed again is recognised and answered from what it was answered with, once every value
 * read from it compares equal (docs/bindings.md, "Repeated calls").
 */
export declare function buildSystemPrompt(options: BuildSystemPromptOptions16, settings?: BuildSystemPromptSettings): string;

/** The base class of every failure the package reports. */
export declare class PromptstackError extends Error {
  /** The located findings behind the failure (may be empty). */
  diagnostics: Diagnostic[];
  [key: string]: unknown;
}
/** A spec that cannot be compiled. */
export declare class SpecError extends PromptstackError {
  truncated: boolean;
}
/** A send context that cannot be read for the agent. */
export declare class SendError extends PromptstackError {
  truncated: boolean;
}
/** A file that cannot be read; `path` names it. */
export declare class InputError extends PromptstackError {
  path: string;
}
/** A send that fails to assemble or compose. */
export declare class AssemblyError extends PromptstackError {
  kind: string;
  block?: string;
}
/** A provider request that cannot be built. */
export declare class RequestError extends PromptstackError {
  kind: string;
}
/** An unknown target. */
export declare class NotFoundError extends PromptstackError {
  kind: string;
}
/** Content or provenance the fence refuses. */
export declare class FenceError extends PromptstackError {}
/** A citation stream whose output would pass its bound, or that holds as many widget events untaken as it keeps (the delta was not read: take them and feed it again). */
export declare class CiteError extends PromptstackError {
  /** The input byte where the output stopped (absent for widget events). */
  at?: number;
  limit: number;
}
/** An option the package does not accept. */
export declare class UsageError extends PromptstackError {}
