// @promptstack/node: the promptstack engine in-process for Node.
//
// Load an agent spec once (`Agent.fromPath`, `Agent.fromSource`), assemble per send
// (`agent.assemble(send)`), then compose a target's texts (`assembly.compose(target)`) or build a
// provider request (`assembly.request(format, { conversation })`). The bytes are the command
// line's. `buildSystemPrompt` is a drop-in for the coding agent's builder of the same name.
//
// The native addon (`promptstack.node`, built from `src/lib.rs`) does the work; this file gives it
// JavaScript idioms: plain objects for send contexts and conversations, option objects, getters,
// and `Error` subclasses that carry the located diagnostics.
"use strict";

const { homedir } = require("node:os");
const { join: joinPath, resolve: resolvePath } = require("node:path");
const { existsSync, readFileSync } = require("node:fs");
const { createRequire } = require("node:module");

const native = require("./promptstack.node");

/** The prefix of a native failure's message; the rest is the failure as JSON (see src/lib.rs). */
const ERROR_MARKER = "\u0001promptstack-error:";

/** The base class of every failure the package reports. */
class PromptstackError extends Error {
  constructor(message, details = {}) {
    super(message);
    this.name = new.target.name;
    /** The located findings behind the failure (may be empty). */
    this.diagnostics = details.diagnostics ?? [];
    for (const [key, value] of Object.entries(details)) {
      if (key !== "diagnostics" && key !== "message" && key !== "class" && value !== undefined && value !== null) {
        this[key] = value;
      }
    }
  }
}
/** A spec that cannot be compiled; `diagnostics` holds every problem with its location. */
class SpecError extends PromptstackError {}
/** A send context that cannot be read for the agent; `diagnostics` holds the located problems. */
class SendError extends PromptstackError {}
/** A file that cannot be read (missing, not a regular file, over its size limit); `path` names it. */
class InputError extends PromptstackError {}
/** A send that fails to assemble or compose (a template or gate failing at render time); `kind` and `block` say which. */
class AssemblyError extends PromptstackError {}
/** A provider request that cannot be built (no user message, a model the rules do not cover, a bad conversation). */
class RequestError extends PromptstackError {}
/** An unknown target. */
class NotFoundError extends PromptstackError {}
/** Content or provenance the fence refuses (a hostile origin, an unknown kind). */
class FenceError extends PromptstackError {}
/** A citation stream whose output would pass its bound; `at` is the input byte. */
class CiteError extends PromptstackError {}
/** An option the package does not accept (an unknown format or mode). */
class UsageError extends PromptstackError {}

const ERROR_CLASSES = {
  PromptstackError,
  SpecError,
  SendError,
  InputError,
  AssemblyError,
  RequestError,
  NotFoundError,
  FenceError,
  CiteError,
  UsageError,
};

/** Turns a native failure into its `Error` subclass; anything else passes through. */
function convert(error) {
  if (error instanceof Error && typeof error.message === "string" && error.message.startsWith(ERROR_MARKER)) {
    const details = JSON.parse(error.message.slice(ERROR_MARKER.length));
    const Class = ERROR_CLASSES[details.class] ?? PromptstackError;
    return new Class(details.message, details);
  }
  return error;
}

function call(fn) {
  try {
    return fn();
  } catch (error) {
    throw convert(error);
  }
}

/** JSON text (or bytes) of a send context, a conversation or a sources snapshot. */
function jsonInput(value, what) {
  if (typeof value === "string") return value;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value !== null && typeof value === "object") return JSON.stringify(value);
  throw new TypeError(`${what} must be an object, a JSON string or UTF-8 bytes`);
}

function optionalString(value, what) {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new TypeError(`${what} must be a string`);
  return value;
}

/** A compiled agent spec: load it once, assemble per send. */
class Agent {
  #native;

  /** @internal Use `Agent.fromPath` or `Agent.fromSource`. */
  constructor(handle) {
    if (!(handle instanceof native.Agent)) {
      throw new TypeError("use Agent.fromPath or Agent.fromSource to create an Agent");
    }
    this.#native = handle;
  }

  /** Reads and compiles a spec file (`.json` is JSON, anything else TOML), as the command line does. */
  static fromPath(path) {
    if (typeof path !== "string" && !(path instanceof URL)) throw new TypeError("path must be a string");
    const file = path instanceof URL ? require("node:url").fileURLToPath(path) : path;
    return new Agent(call(() => native.Agent.fromPath(file)));
  }

  /** Compiles a spec from its text; `format` is `"toml"` (default) or `"json"`, `name` names it in diagnostics. */
  static fromSource(text, options = {}) {
    const source = typeof text === "string" ? text : jsonInput(text, "text");
    const format = optionalString(options.format, "format");
    const name = optionalString(options.name, "name");
    return new Agent(call(() => native.Agent.fromSource(source, format, name)));
  }

  /** The agent's name. */
  get name() {
    return this.#native.name;
  }

  /** The ids of the spec's targets. */
  get targets() {
    return this.#native.targets;
  }

  /** Assembles one send: `send` is a send-context object, its JSON text, or UTF-8 bytes. */
  assemble(send) {
    if (send !== null && typeof send === "object" && !(send instanceof Uint8Array)) {
      // The addon reads and checks the text exactly as `assemble` does.
      const json = JSON.stringify(send);
      return new Assembly(call(() => this.#native.assembleStringified(json)));
    }
    const input = jsonInput(send, "send");
    return new Assembly(call(() => this.#native.assemble(input)));
  }

  /**
   * The spec's lint findings, then, for each send, those of assembling it and composing every
   * target. Each finding is a diagnostic; `send` is the index of the send it is about.
   */
  lint(sends = []) {
    if (!Array.isArray(sends)) throw new TypeError("sends must be an array");
    const inputs = sends.map((send) => jsonInput(send, "send"));
    return call(() => this.#native.lint(inputs)).map((finding) =>
      finding.send === undefined ? finding : { ...finding, send: Number(finding.send) },
    );
  }

  /**
   * What `promptstack explain --json` reports for one send: the assembly, each target (or
   * `target` alone) with token counts, injections, and with `format` each target's cache
   * breakpoints.
   */
  explain(send, options = {}) {
    const input = jsonInput(send, "send");
    const target = optionalString(options.target, "target");
    const format = optionalString(options.format, "format");
    return call(() => this.#native.explain(input, target, format));
  }
}

function requestInput(options) {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== "object") throw new TypeError("options must be an object");
  const conversation = options.conversation;
  return {
    conversation: conversation === undefined || conversation === null ? undefined : String(jsonInput(conversation, "conversation")),
    target: optionalString(options.target, "target") ?? undefined,
    model: optionalString(options.model, "model") ?? undefined,
    maxTokens: options.maxTokens ?? undefined,
    gapSeconds: options.gapSeconds ?? undefined,
    cacheKey: optionalString(options.cacheKey, "cacheKey") ?? undefined,
    cachedContent: optionalString(options.cachedContent, "cachedContent") ?? undefined,
    rules: optionalString(options.rules, "rules") ?? undefined,
  };
}

/** One send's assembly: every block with its provenance, the two halves, the diagnostics. */
class Assembly {
  #native;

  /** @internal Returned by `agent.assemble`. */
  constructor(handle) {
    if (!(handle instanceof native.Assembly)) throw new TypeError("an Assembly comes from agent.assemble");
    this.#native = handle;
  }

  /** The stable half of the body text. */
  get stable() {
    return this.#native.stable;
  }
  /** The volatile half of the body text. */
  get volatile() {
    return this.#native.volatile;
  }
  /** The whole body text. */
  get full() {
    return this.#native.full;
  }
  /** The fingerprint of the stable inputs and text (hex). */
  get fingerprint() {
    return this.#native.fingerprint;
  }
  /** The targets this assembly can compose. */
  get targets() {
    return this.#native.targets;
  }
  /** Every block: id, kind, trust, stability, state (with the reason when excluded), tokens, text. */
  get blocks() {
    return this.#native.blocks;
  }
  /** The findings of assembling. */
  get diagnostics() {
    return this.#native.diagnostics;
  }

  /** The texts one target sends: `{ target, system, user, userPosition, stablePrefix, parts, diagnostics, shed }`. */
  compose(target) {
    if (typeof target !== "string") throw new TypeError("target must be a string");
    return new Composition(this.#native, call(() => this.#native.compose(target)));
  }

  /**
   * The provider request body for this send, as an object. `format` is `anthropic`,
   * `openai-chat`, `openai-responses` or `gemini`; `options.conversation` is the conversation so
   * far (`{ messages: [...] }`, an object or its JSON).
   */
  request(format, options) {
    return JSON.parse(this.requestJson(format, options));
  }

  /** The provider request body, byte for byte as it is sent. */
  requestJson(format, options) {
    return this.plan(format, options).body;
  }

  /** The request with its cache plan: `{ format, model, target, body, plan, units, diagnostics }` (`body` is the exact JSON text). */
  plan(format, options) {
    if (typeof format !== "string") throw new TypeError("format must be a string");
    const input = requestInput(options);
    return call(() => this.#native.request(format, input));
  }

  /** The assembly JSON (`promptstack.assembly/v1`), so `JSON.stringify(assembly)` gives it. */
  toJSON() {
    return JSON.parse(call(() => this.#native.toJson()));
  }
}

/**
 * One target's texts. `parts`, `diagnostics` and `shed` are computed when first read: most
 * sends need only the texts.
 */
class Composition {
  #assembly;
  #details = null;

  /** @internal Returned by `assembly.compose`. */
  constructor(assembly, texts) {
    this.#assembly = assembly;
    /** The target. */
    this.target = texts.target;
    /** The system text. */
    this.system = texts.system;
    /** The user-slot text (the notes placed with the last user message). */
    this.user = texts.user;
    /** Where the user-slot text goes relative to the user's message. */
    this.userPosition = texts.userPosition;
    /** The byte length of the system text's cacheable prefix. */
    this.stablePrefix = texts.stablePrefix;
  }

  #read() {
    if (this.#details === null) this.#details = call(() => this.#assembly.composeDetails(this.target));
    return this.#details;
  }
  /** The parts of both texts, each naming its block. */
  get parts() {
    return this.#read().parts;
  }
  /** The findings of composing (blocks shed by a token budget, …). */
  get diagnostics() {
    return this.#read().diagnostics;
  }
  /** The blocks the target's token budget shed, with the reason. */
  get shed() {
    return this.#read().shed;
  }
  toJSON() {
    const { target, system, user, userPosition, stablePrefix } = this;
    return { target, system, user, userPosition, stablePrefix, parts: this.parts, diagnostics: this.diagnostics, shed: this.shed };
  }
}

/**
 * Wraps untrusted content in a fence with a fresh nonce. `kind` is `page`, `selection`, `file`,
 * `mcp-resource` or `tool-result`; `origin` a URL, path or `mcp://SERVER/URI`; `tool` the
 * registry name of the tool that produced it; `maxBytes` cuts the body first.
 */
function fence(content, options) {
  if (typeof content !== "string") throw new TypeError("content must be a string");
  if (options === null || typeof options !== "object") throw new TypeError("options must be an object with a kind");
  const kind = optionalString(options.kind, "kind");
  if (kind === null) throw new TypeError("options.kind is required");
  const origin = optionalString(options.origin, "origin");
  const tool = optionalString(options.tool, "tool");
  const maxBytes = options.maxBytes ?? null;
  if (maxBytes !== null && !(Number.isInteger(maxBytes) && maxBytes >= 0 && maxBytes <= 0xffffffff)) {
    throw new RangeError("maxBytes must be a non-negative integer below 2^32");
  }
  return call(() => native.fence(content, kind, origin, tool, maxBytes));
}

/** Checks that `text` is exactly one valid fence: `{ valid, fence, problems }`. */
function checkFence(text) {
  if (typeof text !== "string") throw new TypeError("text must be a string");
  return native.checkFence(text);
}

/**
 * The model's streamed text through the citation and math processor. `sources` is a list of
 * `{ index, url, title }` (or `{ sources: [...] }`, or its JSON); `mode` is `placeholders`
 * (default: `{{cite:K}}` plus the citation map) or `links` (Markdown links); `widgets` names the
 * widget tags to parse out of the text (`chart`, or with a namespace `widget:map`).
 */
class CiteStream {
  #native;

  constructor(sources, options = {}) {
    const snapshot = Array.isArray(sources) ? { sources } : sources;
    const json = String(jsonInput(snapshot, "sources"));
    const mode = optionalString(options.mode, "mode");
    const widgets = options.widgets ?? null;
    if (widgets !== null && !Array.isArray(widgets)) throw new TypeError("widgets must be an array of names");
    this.#native = call(() => new native.CiteStream(json, mode, widgets));
  }

  /** Feeds a delta of the model's text; returns the display-ready text decided so far. */
  feed(delta) {
    if (typeof delta !== "string") throw new TypeError("delta must be a string");
    return call(() => this.#native.feed(delta));
  }

  /** Ends the stream; returns the rest of the text. */
  finish() {
    return call(() => this.#native.finish());
  }

  /** The citation map: `[{ key, placeholder, sources }]`, one entry per citation run. */
  get citations() {
    return this.#native.citations;
  }

  /** Resolved and unresolved citation counts so far. */
  get score() {
    return this.#native.score;
  }

  /**
   * The widget tags removed from the text since the last call. It empties the same queue as
   * `takeWidgetEvents()`: use one or the other.
   */
  takeWidgets() {
    return this.#native.takeWidgets();
  }

  /**
   * The widget events decided since the last call, in order, as `promptstack cite --json`
   * prints them: `widget_start` while a declared widget's tag streams, then `widget` when it is
   * removed or `widget_cancel` when it turns out not to be one.
   */
  takeWidgetEvents() {
    return this.#native.takeWidgetEvents();
  }

  /** The widget whose tag is streaming now, `{ name, offset }` (where the text so far ends), or null. */
  get loading() {
    return this.#native.loading;
  }
}

// ---------------------------------------------------------------------------------------------
// The drop-in for `buildSystemPrompt` of @mariozechner/pi-coding-agent@0.73.1, on the pi-compat
// spec (examples/pi-compat/agent.toml, compiled into the addon). The options map onto a send as
// examples/pi-compat/README.md describes; the clock and the package directory are read as the
// peer reads them (see docs/bindings.md).

/** The instant written into a 0.73.1 send's text; the call's own clock reading goes beside it. */
const PI_PLACEHOLDER_NOW = "2000-01-01T00:00:00Z";

/** The model descriptor of every pi-compat send (the spec does not render it). */
const PI_MODEL = { id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", provider: "anthropic" };

/** `PI_MODEL` as JSON, written once. */
const PI_MODEL_JSON = JSON.stringify(PI_MODEL);

// The send's JSON text, written without `JSON.stringify` walking the whole send on every call:
// escaping long context files and skills was most of a large call. A string's JSON is kept by
// the string (a `Map` finds a string it has seen by its cached hash), bounded by entries and
// characters. Everything else is written as `JSON.stringify` writes it, member by member: a value
// that is neither a string nor an array of strings is handed to `JSON.stringify` as the only
// member of an object, so `toJSON`, left-out values and every other rule stay its own.
const jsonStrings = new Map();
let jsonStringChars = 0;
const JSON_STRINGS_MAX = 4096;
const JSON_STRING_CHARS_MAX = 8 << 20;

function jsonString(text) {
  let json = jsonStrings.get(text);
  if (json === undefined) {
    json = JSON.stringify(text);
    if (jsonStrings.size >= JSON_STRINGS_MAX || jsonStringChars + text.length + json.length > JSON_STRING_CHARS_MAX) {
      jsonStrings.clear();
      jsonStringChars = 0;
    }
    jsonStrings.set(text, json);
    jsonStringChars += text.length + json.length;
  }
  return json;
}

/**
 * `"key":value` as `JSON.stringify` writes the member of an object, or "" where it leaves it
 * out. Strings, arrays of strings and plain objects of strings are written here; anything else
 * by `JSON.stringify`.
 */
function jsonMember(key, value) {
  if (typeof value === "string") return `"${key}":${jsonString(value)}`;
  if (Array.isArray(value) && value.toJSON === undefined) {
    const length = value.length;
    let out = "";
    let i = 0;
    for (; i < length; i++) {
      const item = value[i];
      if (typeof item !== "string") break;
      out += (i === 0 ? "" : ",") + jsonString(item);
    }
    if (i === length) return `"${key}":[${out}]`;
  } else if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype && value.toJSON === undefined) {
    // A plain object of strings (tool snippets): its own enumerable keys, in their order.
    let out = "";
    let all = true;
    for (const name of Object.keys(value)) {
      const item = value[name];
      if (typeof item !== "string") {
        all = false;
        break;
      }
      out += (out === "" ? "" : ",") + jsonString(name) + ":" + jsonString(item);
    }
    if (all) return `"${key}":{${out}}`;
  }
  const member = JSON.stringify({ [key]: value });
  return member === "{}" ? "" : member.slice(1, -1);
}

/** An object of the drop-in's own making (plain keys, in their order), as `JSON.stringify` writes it. */
function jsonRecord(record) {
  let out = "";
  for (const key of Object.keys(record)) {
    const member = jsonMember(key, record[key]);
    if (member !== "") out += (out === "" ? "" : ",") + member;
  }
  return `{${out}}`;
}

/** A list of the drop-in's records (context files, skills, sections). */
function jsonRecords(records) {
  let out = "";
  for (let i = 0; i < records.length; i++) out += (i === 0 ? "" : ",") + jsonRecord(records[i]);
  return `[${out}]`;
}

/**
 * A send of the drop-in's making, byte for byte `JSON.stringify(send)`: `model` is `PI_MODEL`,
 * `variables` a record, `context_files`, `skills` and `variables.sections` lists of records.
 */
function piSendJson(send) {
  let out = "";
  for (const key of Object.keys(send)) {
    const value = send[key];
    let member;
    if (key === "model") {
      member = `"model":${PI_MODEL_JSON}`;
    } else if (key === "variables") {
      let variables = "";
      for (const name of Object.keys(value)) {
        const m = name === "sections" ? `"sections":${jsonRecords(value[name])}` : jsonMember(name, value[name]);
        if (m !== "") variables += (variables === "" ? "" : ",") + m;
      }
      member = `"variables":{${variables}}`;
    } else if (key === "context_files" || key === "skills") {
      member = `"${key}":${jsonRecords(value)}`;
    } else {
      member = jsonMember(key, value);
    }
    if (member !== "") out += (out === "" ? "" : ",") + member;
  }
  return `{${out}}`;
}

let piAgent = null;

function piCompatAgent() {
  if (piAgent === null) piAgent = native.Agent.fromSource(native.piCompatSpec(), "toml", "pi-compat.toml");
  return piAgent;
}

const pad2 = (n) => (n < 10 ? "0" : "") + n;
const pad3 = (n) => (n < 10 ? "00" : n < 100 ? "0" : "") + n;

/** Refuses a clock that reads a year outside 1000–9999 in the process's local time zone. */
function checkYear(clock) {
  const year = clock.getFullYear();
  if (!(year >= 1000 && year <= 9999)) {
    throw new RangeError(`buildSystemPrompt: the clock reads year ${year}; only years 1000 to 9999 are supported`);
  }
}

/**
 * The clock as the peer reads it (one `new Date()`, `clock`), in the process's local time zone,
 * written as an RFC 3339 instant with the local offset so the send's date is the local calendar
 * date.
 */
function localInstant(clock) {
  const offset = -Math.round(clock.getTimezoneOffset());
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return (
    `${clock.getFullYear()}-${pad2(clock.getMonth() + 1)}-${pad2(clock.getDate())}` +
    `T${pad2(clock.getHours())}:${pad2(clock.getMinutes())}:${pad2(clock.getSeconds())}.${pad3(clock.getMilliseconds())}` +
    `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`
  );
}

let lastPackageDirInput = null;
let lastPackageDir = null;

/**
 * The directory the documentation paths point into: `settings.packageDir`, else `PI_PACKAGE_DIR`
 * (a leading `~` is the home directory), else this package's own directory, as the peer falls
 * back to its own install location. Resolved against the process's working directory.
 */
function piPackageDir(settings) {
  let dir = settings?.packageDir ?? process.env.PI_PACKAGE_DIR;
  if (!dir) {
    dir = __dirname;
  } else if (dir === "~") {
    dir = homedir();
  } else if (dir.startsWith("~/")) {
    dir = homedir() + dir.slice(1);
  }
  if (dir !== lastPackageDirInput) {
    const resolved = resolvePath(dir);
    // The spec appends "/README.md"; the root directory must not give "//README.md".
    lastPackageDir = resolved === "/" ? "" : resolved;
    lastPackageDirInput = dir;
  }
  return lastPackageDir;
}

/**
 * Refuses the inputs the peer renders with JavaScript artefacts (PEER.md, [domain]) instead of
 * returning different text: snippets that are not strings, a listed tool named like an
 * `Object.prototype` member without its own snippet, a custom prompt or appended text that is
 * not a string (the peer would print `true` where a template prints `True`), guidelines and skill
 * fields that are not strings (where the peer throws a TypeError of its own). Returns whether
 * the original reads the skills at all.
 */
function checkPiDomain(options) {
  for (const key of ["customPrompt", "appendSystemPrompt"]) {
    if (options[key] != null && typeof options[key] !== "string") {
      throw new TypeError(`buildSystemPrompt: options.${key} must be a string`);
    }
  }
  const customPath = Boolean(options.customPrompt);
  const tools = options.selectedTools;
  if (tools != null && (!Array.isArray(tools) || !tools.every((name) => typeof name === "string"))) {
    throw new TypeError("buildSystemPrompt: options.selectedTools must be an array of strings");
  }
  if (!customPath) {
    const snippets = options.toolSnippets;
    if (snippets != null) {
      if (typeof snippets !== "object" || Array.isArray(snippets)) {
        throw new TypeError("buildSystemPrompt: options.toolSnippets must be an object");
      }
      for (const name of tools ?? ["read", "bash", "edit", "write"]) {
        const own = Object.hasOwn(snippets, name);
        if (!own && name in snippets) {
          throw new RangeError(`buildSystemPrompt: the tool name ${JSON.stringify(name)} is an Object.prototype member without its own snippet`);
        }
        if (own && snippets[name] && typeof snippets[name] !== "string") {
          throw new TypeError(`buildSystemPrompt: options.toolSnippets[${JSON.stringify(name)}] must be a string`);
        }
      }
    }
    const guidelines = options.promptGuidelines;
    if (guidelines != null && (!Array.isArray(guidelines) || !guidelines.every((g) => typeof g === "string"))) {
      throw new TypeError("buildSystemPrompt: options.promptGuidelines must be an array of strings");
    }
  }
  const skills = options.skills;
  // The original reads the skills only when the read tool is available (PEER.md §5).
  const skillsRead = customPath ? tools == null || tools.includes("read") : (tools ?? ["read"]).includes("read");
  if (skills != null && skillsRead) {
    if (!Array.isArray(skills)) throw new TypeError("buildSystemPrompt: options.skills must be an array");
    for (const skill of skills) {
      if (skill === null || typeof skill !== "object") throw new TypeError("buildSystemPrompt: every skill must be an object");
      if (!skill.disableModelInvocation && (typeof skill.name !== "string" || typeof skill.description !== "string" || typeof skill.filePath !== "string")) {
        throw new TypeError("buildSystemPrompt: a skill's name, description and filePath must be strings");
      }
    }
  }
  const files = options.contextFiles;
  if (files != null && !Array.isArray(files)) throw new TypeError("buildSystemPrompt: options.contextFiles must be an array");
  return skillsRead;
}

/** The coding agent's versions whose builder `buildSystemPrompt` reproduces. */
const PI_VERSIONS = Object.freeze(["0.73.1", "1.6.0"]);

/** The package each version is published as. */
const PI_PACKAGES = Object.freeze({ "0.73.1": "@mariozechner/pi-coding-agent", "1.6.0": "@earendil-works/pi-coding-agent" });

let detectedVersion = null;

/**
 * The version of the coding agent installed where the process runs: the nearest
 * `node_modules/<package>/package.json` on Node's lookup path from the working directory. 1.6.0
 * when `@earendil-works/pi-coding-agent` is found first (or in the same directory as the older
 * package), 0.73.1 otherwise, whether `@mariozechner/pi-coding-agent` is found or nothing is (the
 * drop-in's behaviour before it served two versions). Looked up once per process.
 */
function installedPiVersion() {
  if (detectedVersion !== null) return detectedVersion;
  detectedVersion = "0.73.1";
  let paths = [];
  try {
    paths = createRequire(joinPath(process.cwd(), "index.js")).resolve.paths(PI_PACKAGES["1.6.0"]) ?? [];
  } catch {
    // No working directory to look from: the default stands.
  }
  for (const dir of paths) {
    if (existsSync(joinPath(dir, PI_PACKAGES["1.6.0"], "package.json"))) {
      detectedVersion = "1.6.0";
      break;
    }
    if (existsSync(joinPath(dir, PI_PACKAGES["0.73.1"], "package.json"))) break;
  }
  return detectedVersion;
}

/** The version `settings.version` names, or the installed one. */
function piVersion(settings) {
  const version = settings?.version;
  if (version === undefined || version === null) return installedPiVersion();
  if (!PI_VERSIONS.includes(version)) {
    throw new RangeError(`buildSystemPrompt: settings.version must be one of ${PI_VERSIONS.join(", ")}`);
  }
  return version;
}

/**
 * Builds the coding agent's system prompt, byte for byte what `buildSystemPrompt(options)`
 * returns in `@mariozechner/pi-coding-agent@0.73.1` or `@earendil-works/pi-coding-agent@1.6.0`,
 * from that version's options object. `settings.version` chooses the version; without it, the
 * version installed where the process runs (see `installedPiVersion`). `settings.packageDir`
 * overrides where the documentation paths point (otherwise `PI_PACKAGE_DIR`, otherwise this
 * package's directory). For 1.6.0 a context file that would close its tag is escaped instead
 * (examples/pi-compat-1.6/README.md).
 */
function buildSystemPrompt(options, settings) {
  if (options === null || typeof options !== "object") {
    throw new TypeError("buildSystemPrompt: options must be an object");
  }
  if (settings !== undefined && settings !== null && typeof settings !== "object") {
    throw new TypeError("buildSystemPrompt: settings must be an object");
  }
  return piVersion(settings) === "1.6.0" ? buildSystemPrompt16(options, settings) : buildSystemPrompt073(options, settings);
}

// Options objects the drop-in has answered. An application passes the same options object on
// many calls (each turn of a session); from its second call on, such an object is found by its
// identity, and every value the drop-in reads from it is read again and compared with what the
// call that kept it read, so a changed object (at any depth), a new day or a new package
// directory gives what a first call gives. What is kept per object: what was read, the day and
// package directory the answer depends on, and the answer. A refused call keeps nothing (it is
// checked and refused again); an object holding anything but strings, numbers, booleans, null
// and undefined in plain arrays and plain objects is not kept (it is read afresh on every call).
// A `WeakMap` holds no object alive.
const piAnswers = new WeakMap();
/** Options objects answered once. */
const piSeenOnce = new WeakSet();

/** Marks a list and a map among the values read, so that a value cannot pass for either. */
const READ_LIST = Object.freeze({ list: true });
const READ_MAP = Object.freeze({ map: true });

const isPrimitive = (value) => value === null || (typeof value !== "object" && typeof value !== "function");

/** A plain array without `toJSON` (written as `JSON.stringify` writes it, item by item). */
const isPlainList = (value) => Array.isArray(value) && value.toJSON === undefined;

/** A plain object without `toJSON` (its own enumerable string keys, in their order). */
const isPlainMap = (value) =>
  value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype && value.toJSON === undefined;

/** A value that is a primitive. */
function readValue(value) {
  return isPrimitive(value) && see(value);
}

/** A list of primitives, or a primitive in its place. */
function readList(list) {
  if (isPrimitive(list)) return see(list);
  if (!isPlainList(list)) return false;
  const length = list.length;
  if (!see(READ_LIST) || !see(length)) return false;
  for (let i = 0; i < length; i++) if (!readValue(list[i])) return false;
  return true;
}

/** A map whose values `readEntry` reads, or a primitive in its place. */
function readMap(map, readEntry) {
  if (isPrimitive(map)) return see(map);
  if (!isPlainMap(map)) return false;
  const keys = Object.keys(map);
  if (!see(READ_MAP) || !see(keys.length)) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (!see(key) || !readEntry(map[key])) return false;
  }
  return true;
}

/** A list of records, each read by `readRecord`, or a primitive in its place. */
function readRecords(list, readRecord) {
  if (isPrimitive(list)) return see(list);
  if (!isPlainList(list)) return false;
  const length = list.length;
  if (!see(READ_LIST) || !see(length)) return false;
  for (let i = 0; i < length; i++) {
    const record = list[i];
    if (record === null || typeof record !== "object" || !readRecord(record)) return false;
  }
  return true;
}

/** What is read of a context file. */
const readFile = (file) => readValue(file.path) && readValue(file.content);

/** What is read of a skill. */
const readSkill = (skill) =>
  readValue(skill.disableModelInvocation) && readValue(skill.name) && readValue(skill.description) && readValue(skill.filePath);

/** Every value a 0.73.1 call reads from `options` (its checks and its send), through `see`. */
function readPi073(options) {
  return (
    readValue(options.cwd) &&
    readValue(options.customPrompt) &&
    readList(options.selectedTools) &&
    readMap(options.toolSnippets, readValue) &&
    readList(options.promptGuidelines) &&
    readValue(options.appendSystemPrompt) &&
    readRecords(options.contextFiles, readFile) &&
    readRecords(options.skills, readSkill)
  );
}

/** Every value a 1.6.0 call reads from `options` (its checks and its send), through `see`. */
function readPi16(options) {
  const force = options.forceSystemPrompt;
  if (!readValue(force)) return false;
  // The peer reads nothing else once the prompt is forced.
  if (force !== undefined) return true;
  return (
    readValue(options.cwd) &&
    readValue(options.customPrompt) &&
    readList(options.selectedTools) &&
    readList(options.hiddenTools) &&
    readMap(options.toolSnippets, readValue) &&
    readMap(options.toolGuidelines, readList) &&
    readList(options.promptGuidelines) &&
    readValue(options.appendSystemPrompt) &&
    readMap(options.sections, readValue) &&
    readRecords(options.contextFiles, readFile) &&
    readRecords(options.skills, readSkill)
  );
}

// The same readings compared with the values a call recorded, without a reading under way:
// each answers the position after what it compared, or -1 where a value differs (or is of a
// kind that is never recorded). A recorded value is a primitive or a marker, and a marker never
// leaves this file, so `===` with a recorded value decides both the kind and the value.

/** A list of primitives, or a primitive in its place. */
function sameList(list, values, at) {
  if (values[at] !== READ_LIST) return values[at] === list ? at + 1 : -1;
  if (!isPlainList(list)) return -1;
  const length = list.length;
  if (values[at + 1] !== length) return -1;
  at += 2;
  for (let i = 0; i < length; i++, at++) if (values[at] !== list[i]) return -1;
  return at;
}

/** A primitive. */
const sameValue = (value, values, at) => (values[at] === value ? at + 1 : -1);

/** A map whose values `sameEntry` compares, or a primitive in its place. */
function sameMap(map, values, at, sameEntry) {
  if (values[at] !== READ_MAP) return values[at] === map ? at + 1 : -1;
  if (!isPlainMap(map)) return -1;
  const keys = Object.keys(map);
  if (values[at + 1] !== keys.length) return -1;
  at += 2;
  for (let i = 0; i < keys.length && at >= 0; i++) {
    const key = keys[i];
    at = values[at] === key ? sameEntry(map[key], values, at + 1) : -1;
  }
  return at;
}

/** A list of records, each compared by `sameRecord`, or a primitive in its place. */
function sameRecords(list, values, at, sameRecord) {
  if (values[at] !== READ_LIST) return values[at] === list ? at + 1 : -1;
  if (!isPlainList(list)) return -1;
  const length = list.length;
  if (values[at + 1] !== length) return -1;
  at += 2;
  for (let i = 0; i < length && at >= 0; i++) {
    const record = list[i];
    at = record !== null && typeof record === "object" ? sameRecord(record, values, at) : -1;
  }
  return at;
}

const sameFile = (file, values, at) => (values[at] === file.path && values[at + 1] === file.content ? at + 2 : -1);

const sameSkill = (skill, values, at) =>
  values[at] === skill.disableModelInvocation &&
  values[at + 1] === skill.name &&
  values[at + 2] === skill.description &&
  values[at + 3] === skill.filePath
    ? at + 4
    : -1;

/** Whether a 0.73.1 call reads from `options` exactly the values `values` holds (`readPi073`). */
function samePi073(options, values) {
  let at = values[0] === options.cwd && values[1] === options.customPrompt ? 2 : -1;
  if (at >= 0) at = sameList(options.selectedTools, values, at);
  if (at >= 0) at = sameMap(options.toolSnippets, values, at, sameValue);
  if (at >= 0) at = sameList(options.promptGuidelines, values, at);
  if (at >= 0) at = sameValue(options.appendSystemPrompt, values, at);
  if (at >= 0) at = sameRecords(options.contextFiles, values, at, sameFile);
  if (at >= 0) at = sameRecords(options.skills, values, at, sameSkill);
  return at === values.length;
}

/** Whether a 1.6.0 call reads from `options` exactly the values `values` holds (`readPi16`). */
function samePi16(options, values) {
  const force = options.forceSystemPrompt;
  if (values[0] !== force) return false;
  if (force !== undefined) return values.length === 1;
  let at = values[1] === options.cwd && values[2] === options.customPrompt ? 3 : -1;
  if (at >= 0) at = sameList(options.selectedTools, values, at);
  if (at >= 0) at = sameList(options.hiddenTools, values, at);
  if (at >= 0) at = sameMap(options.toolSnippets, values, at, sameValue);
  if (at >= 0) at = sameMap(options.toolGuidelines, values, at, sameList);
  if (at >= 0) at = sameList(options.promptGuidelines, values, at);
  if (at >= 0) at = sameValue(options.appendSystemPrompt, values, at);
  if (at >= 0) at = sameMap(options.sections, values, at, sameValue);
  if (at >= 0) at = sameRecords(options.contextFiles, values, at, sameFile);
  if (at >= 0) at = sameRecords(options.skills, values, at, sameSkill);
  return at === values.length;
}

// The reading under way: the values recorded so far.
let readValues = null;

/** Records `value`. */
function see(value) {
  readValues.push(value);
  return true;
}

/** Runs `read` over `options`, recording into `values`; false for an object that is not kept. */
function reading(options, read, values) {
  // A getter may call the drop-in again: the reading it interrupts is resumed after it.
  const outer = readValues;
  readValues = values;
  try {
    return read(options);
  } finally {
    readValues = outer;
  }
}

/**
 * The answer kept for `options` when every input it depends on is unchanged, else undefined.
 * `day` is the clock's local day (0.73.1; `null` for 1.6.0, which reads no clock).
 */
function keptAnswer(options, version, day, settings) {
  const kept = piAnswers.get(options);
  if (kept === undefined || kept.version !== version || kept.day !== day) return undefined;
  // The custom and forced paths print no documentation path, and the original reads none there.
  if (kept.packageDir !== null && kept.packageDir !== piPackageDir(settings)) return undefined;
  if (!(version === "1.6.0" ? samePi16 : samePi073)(options, kept.values)) return undefined;
  return kept.text;
}

/** Keeps `text` as the answer for `options`, unless it holds values the drop-in does not keep. */
function keepAnswer(options, version, day, packageDir, text) {
  // An object is kept from its second call on: one built afresh for every call (used once) costs
  // a mark, not a reading and a kept text for the collector to trace.
  if (!piSeenOnce.has(options)) {
    piSeenOnce.add(options);
    return;
  }
  const values = [];
  if (day !== -1 && reading(options, version === "1.6.0" ? readPi16 : readPi073, values)) {
    piAnswers.set(options, { version, day, packageDir, values, text });
  } else {
    piAnswers.delete(options);
  }
}

/**
 * The calendar day of `clock` in the process's local time zone, read with the local-time getters
 * as the peer reads it (a zone's offset may have seconds, which `getTimezoneOffset` rounds away),
 * packed as `year * 10000 + month * 100 + day`: what a 0.73.1 answer depends on of the clock.
 * -1 (no answer kept) outside the years 1000–9998: the drop-in refuses other years, and the
 * engine refuses an instant past 9999-12-30T22:00Z, so the last year's answer depends on the
 * time of day.
 */
function localDay(clock) {
  const year = clock.getFullYear();
  return year >= 1000 && year <= 9998 ? year * 10000 + (clock.getMonth() + 1) * 100 + clock.getDate() : -1;
}

// Answers by the send's JSON text, for an options object built afresh with the content of one
// answered before (an application that writes its options object per call): each version's
// texts by the send's text, with the day they were made for (0.73.1) or `null` (1.6.0). Bounded
// by entries and characters, past which it starts afresh. A refused send keeps nothing.
const piTexts = { "0.73.1": new Map(), "1.6.0": new Map() };
let piTextChars = 0;
const PI_TEXTS_MAX = 256;
const PI_TEXT_CHARS_MAX = 16 << 20;

/** The text kept for `json` on `day`, or undefined. */
function keptText(version, json, day) {
  const kept = piTexts[version].get(json);
  return kept !== undefined && kept.day === day ? kept.text : undefined;
}

/** Keeps `text` as the answer to `json` on `day` (never for -1, a day no answer is kept for). */
function keepText(version, json, day, text) {
  if (day === -1) return;
  const chars = json.length + text.length;
  if (chars > PI_TEXT_CHARS_MAX) return;
  const texts = piTexts[version];
  if (texts.size >= PI_TEXTS_MAX || piTextChars + chars > PI_TEXT_CHARS_MAX) {
    piTexts["0.73.1"].clear();
    piTexts["1.6.0"].clear();
    piTextChars = 0;
  }
  texts.set(json, { day, text });
  piTextChars += chars;
}

/**
 * Puts the options' context files and, when the original reads them (`skillsRead`), its skills
 * into `send`, as both versions do. Skills are sent only when the original would read them (the
 * spec gates them the same way). A hidden skill (truthy `disableModelInvocation`, as the peer
 * tests it) never reaches the prompt; leaving it out of the send is the same and spares checking
 * its fields.
 */
function addFilesAndSkills(send, options, skillsRead) {
  const files = options.contextFiles;
  if (files != null) {
    send.context_files = files.map((file) => ({ path: file.path, content: file.content }));
  }
  const skills = options.skills;
  if (skills != null && skillsRead) {
    send.skills = [];
    for (const skill of skills) {
      if (!skill.disableModelInvocation) {
        send.skills.push({ name: skill.name, description: skill.description, location: skill.filePath });
      }
    }
  }
}

/** `buildSystemPrompt` for 0.73.1. */
function buildSystemPrompt073(options, settings) {
  const clock = new Date();
  const kept = keptAnswer(options, "0.73.1", localDay(clock), settings);
  if (kept !== undefined) return kept;
  const cwd = options.cwd;
  if (typeof cwd !== "string") throw new TypeError("buildSystemPrompt: options.cwd must be a string");
  const skillsRead = checkPiDomain(options);
  const packageDir = piPackageDir(settings);
  const variables = { package_dir: packageDir };
  if (options.customPrompt != null) variables.custom_prompt = options.customPrompt;
  if (options.selectedTools != null) variables.selected_tools = options.selectedTools;
  if (options.toolSnippets != null) variables.tool_snippets = options.toolSnippets;
  if (options.promptGuidelines != null) variables.prompt_guidelines = options.promptGuidelines;
  if (options.appendSystemPrompt != null) variables.append = options.appendSystemPrompt;
  // The send is written with a placeholder instant and the clock passed beside it, so the
  // addon finds a send it has read before by its text (one reading and check per distinct send).
  checkYear(clock);
  const send = { now: PI_PLACEHOLDER_NOW, model: PI_MODEL, cwd, variables };
  addFilesAndSkills(send, options, skillsRead);
  const json = piSendJson(send);
  // The spec prints the clock's date only (`now.date`), as the original does.
  const day = localDay(clock);
  let text = keptText("0.73.1", json, day);
  if (text === undefined) {
    try {
      text = piCompatAgent().systemTextAt(json, localInstant(clock), "system");
    } catch (error) {
      throw convert(error);
    }
    keepText("0.73.1", json, day, text);
  }
  keepAnswer(options, "0.73.1", day, options.customPrompt ? null : packageDir, text);
  return text;
}

let pi16Agent = null;

function piCompat16Agent() {
  if (pi16Agent === null) pi16Agent = native.Agent.fromSource(native.piCompat16Spec(), "toml", "pi-compat-1.6.toml");
  return pi16Agent;
}

/** The instant of every 1.6.0 send (never rendered). */
const PI_16_NOW = "2000-01-01T00:00:00Z";

/** How many declared tools (repeats counted) may have guidelines (the spec's macro depth). */
const PI_MAX_TOOLS_WITH_GUIDELINES = 64;

/** The section names 1.6.0 accepts in `options.sections` (it throws an `Error` for others). */
const PI_SECTION_NAME = /^[a-z][a-z0-9_-]*$/;

const isStringArray = (value) => Array.isArray(value) && value.every((item) => typeof item === "string");

/**
 * Refuses, for 1.6.0, the inputs the peer renders with JavaScript artefacts or throws on (see
 * examples/pi-compat-1.6/PEER.md): as for 0.73.1, plus hidden tools, tool guidelines, sections and
 * context files whose fields are not what the peer's types say. A section name the peer refuses
 * raises the peer's own `Error`. Returns the tools the peer counts as selected.
 */
function checkPi16Domain(options) {
  for (const key of ["customPrompt", "appendSystemPrompt"]) {
    if (options[key] != null && typeof options[key] !== "string") {
      throw new TypeError(`buildSystemPrompt: options.${key} must be a string`);
    }
  }
  for (const key of ["selectedTools", "hiddenTools"]) {
    if (options[key] != null && !isStringArray(options[key])) {
      throw new TypeError(`buildSystemPrompt: options.${key} must be an array of strings`);
    }
  }
  const tools = options.selectedTools ?? ["read", "bash", "edit", "write"];
  const hidden = options.hiddenTools ?? [];
  const declared = tools.filter((name) => !hidden.includes(name));
  const customPath = Boolean(options.customPrompt);
  const guidelines = options.toolGuidelines;
  if (guidelines != null) {
    if (typeof guidelines !== "object" || Array.isArray(guidelines)) {
      throw new TypeError("buildSystemPrompt: options.toolGuidelines must be an object");
    }
    for (const [name, list] of Object.entries(guidelines)) {
      if (!isStringArray(list)) {
        throw new TypeError(`buildSystemPrompt: options.toolGuidelines[${JSON.stringify(name)}] must be an array of strings`);
      }
    }
  }
  if (!customPath) {
    const snippets = options.toolSnippets;
    if (snippets != null && (typeof snippets !== "object" || Array.isArray(snippets))) {
      throw new TypeError("buildSystemPrompt: options.toolSnippets must be an object");
    }
    for (const name of declared) {
      // The peer looks both up on plain objects, so a prototype member answers for a tool of its name.
      for (const [what, map] of [["toolSnippets", snippets ?? {}], ["toolGuidelines", guidelines ?? {}]]) {
        if (!Object.hasOwn(map, name) && name in map) {
          throw new RangeError(`buildSystemPrompt: the tool name ${JSON.stringify(name)} is an Object.prototype member without its own entry in options.${what}`);
        }
      }
      if (snippets != null && Object.hasOwn(snippets, name) && snippets[name] && typeof snippets[name] !== "string") {
        throw new TypeError(`buildSystemPrompt: options.toolSnippets[${JSON.stringify(name)}] must be a string`);
      }
    }
    // The spec gathers the tools' rules one declared tool at a time (a macro calling itself), so
    // it bounds how many may contribute; past the bound the drop-in refuses rather than fail deep
    // in the template.
    const contributing = declared.filter((name) => guidelines != null && Object.hasOwn(guidelines, name)).length;
    if (contributing > PI_MAX_TOOLS_WITH_GUIDELINES) {
      throw new RangeError(`buildSystemPrompt: ${contributing} declared tools have guidelines; at most ${PI_MAX_TOOLS_WITH_GUIDELINES} are supported`);
    }
    if (options.promptGuidelines != null && !isStringArray(options.promptGuidelines)) {
      throw new TypeError("buildSystemPrompt: options.promptGuidelines must be an array of strings");
    }
  } else if (options.promptGuidelines != null && !Array.isArray(options.promptGuidelines)) {
    throw new TypeError("buildSystemPrompt: options.promptGuidelines must be an array");
  }
  const sections = options.sections;
  if (sections != null) {
    if (typeof sections !== "object" || Array.isArray(sections)) {
      throw new TypeError("buildSystemPrompt: options.sections must be an object");
    }
    for (const [name, content] of Object.entries(sections)) {
      if (!PI_SECTION_NAME.test(name) || name === "preamble") throw new Error(`Invalid system prompt section name: ${name}`);
      if (content && typeof content !== "string") {
        throw new TypeError(`buildSystemPrompt: options.sections[${JSON.stringify(name)}] must be a string`);
      }
    }
  }
  const files = options.contextFiles;
  if (files != null) {
    if (!Array.isArray(files)) throw new TypeError("buildSystemPrompt: options.contextFiles must be an array");
    for (const file of files) {
      if (file === null || typeof file !== "object" || typeof file.path !== "string" || typeof file.content !== "string") {
        throw new TypeError("buildSystemPrompt: every context file must be an object with a string path and content");
      }
    }
  }
  const skills = options.skills;
  if (skills != null && !Array.isArray(skills)) throw new TypeError("buildSystemPrompt: options.skills must be an array");
  // The peer formats the skills only when a reader (read or bash) is selected, hidden or not.
  const skillsRead = tools.includes("read") || tools.includes("bash");
  if (skills != null && skillsRead) {
    for (const skill of skills) {
      if (skill === null || typeof skill !== "object") throw new TypeError("buildSystemPrompt: every skill must be an object");
      if (!skill.disableModelInvocation && (typeof skill.name !== "string" || typeof skill.description !== "string" || typeof skill.filePath !== "string")) {
        throw new TypeError("buildSystemPrompt: a skill's name, description and filePath must be strings");
      }
    }
  }
  return skillsRead;
}

/** `buildSystemPrompt` for 1.6.0, on the pi-compat-1.6 spec (examples/pi-compat-1.6/README.md). */
function buildSystemPrompt16(options, settings) {
  const kept = keptAnswer(options, "1.6.0", null, settings);
  if (kept !== undefined) return kept;
  const variables = {};
  // A send carries an instant, but 1.6.0 prints no date and the spec reads none: a constant
  // keeps the clock out of the call entirely.
  const send = { now: PI_16_NOW, model: PI_MODEL, variables };
  const force = options.forceSystemPrompt;
  if (force !== undefined) {
    // The peer reads nothing else once the prompt is forced.
    if (typeof force !== "string") throw new TypeError("buildSystemPrompt: options.forceSystemPrompt must be a string");
    variables.force_prompt = force;
  } else {
    const cwd = options.cwd;
    if (typeof cwd !== "string") throw new TypeError("buildSystemPrompt: options.cwd must be a string");
    const skillsRead = checkPi16Domain(options);
    send.cwd = cwd;
    variables.package_dir = piPackageDir(settings);
    for (const [option, variable] of [
      ["customPrompt", "custom_prompt"],
      ["selectedTools", "selected_tools"],
      ["hiddenTools", "hidden_tools"],
      ["toolSnippets", "tool_snippets"],
      ["toolGuidelines", "tool_guidelines"],
      ["promptGuidelines", "prompt_guidelines"],
      ["appendSystemPrompt", "append"],
    ]) {
      if (options[option] != null) variables[variable] = options[option];
    }
    if (options.customPrompt) {
      // The custom path reads none of these (and the peer accepts any shape for them there).
      delete variables.tool_snippets;
      delete variables.tool_guidelines;
      delete variables.prompt_guidelines;
    }
    if (options.sections != null) {
      // In the object's order; a section without content changes nothing, so it is not sent.
      variables.sections = Object.entries(options.sections)
        .filter(([, content]) => content)
        .map(([name, content]) => ({ name, content }));
    }
    addFilesAndSkills(send, options, skillsRead);
  }
  const json = piSendJson(send);
  let text = keptText("1.6.0", json, null);
  if (text === undefined) {
    try {
      text = piCompat16Agent().systemTextAt(json, PI_16_NOW, "system");
    } catch (error) {
      throw convert(error);
    }
    keepText("1.6.0", json, null, text);
  }
  keepAnswer(options, "1.6.0", null, variables.package_dir === undefined || options.customPrompt ? null : variables.package_dir, text);
  return text;
}

exports.Agent = Agent;
exports.Assembly = Assembly;
exports.Composition = Composition;
exports.CiteStream = CiteStream;
exports.fence = fence;
exports.checkFence = checkFence;
exports.buildSystemPrompt = buildSystemPrompt;
exports.PI_VERSIONS = PI_VERSIONS;
exports.PromptstackError = PromptstackError;
exports.SpecError = SpecError;
exports.SendError = SendError;
exports.InputError = InputError;
exports.AssemblyError = AssemblyError;
exports.RequestError = RequestError;
exports.NotFoundError = NotFoundError;
exports.FenceError = FenceError;
exports.CiteError = CiteError;
exports.UsageError = UsageError;
