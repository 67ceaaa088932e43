// The server's /v1 API, as the page uses it. The key stays in this tab's sessionStorage.

const KEY = 'promptstack.key';

export const key = {
  get: () => sessionStorage.getItem(KEY) ?? '',
  set: (value) => sessionStorage.setItem(KEY, value.trim()),
};

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`);
    this.status = status;
    this.problem = problem ?? {};
  }
}

/** Calls the API; resolves to the parsed JSON answer, or rejects with an `ApiError`. */
export async function call(method, path, body, { signal } = {}) {
  const headers = { Authorization: `Bearer ${key.get()}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = { detail: text }; }
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

const agentPath = (name) => `/v1/agents/${encodeURIComponent(name)}`;

export const api = {
  me: () => call('GET', '/v1/me'),
  agents: () => call('GET', '/v1/agents'),
  versions: (agent) => call('GET', `${agentPath(agent)}/versions`),
  version: (agent, version) => call('GET', `${agentPath(agent)}/versions/${encodeURIComponent(version)}`),
  labels: (agent) => call('GET', `${agentPath(agent)}/labels`),
  op: (agent, name, body, options) => call('POST', `${agentPath(agent)}/${name}`, body, options),
  cacheSim: (agent, body) => call('POST', `${agentPath(agent)}/cache-sim`, body),
  settings: (agent) => call('GET', `${agentPath(agent)}/settings`),
  /** Writes an agent's settings; `expectedRevision` makes it a compare-and-set (409 when stale). */
  saveSettings: (agent, document, expectedRevision) =>
    call('PUT', `${agentPath(agent)}/settings`, { document, expected_revision: expectedRevision }),
  fence: (body) => call('POST', '/v1/fence', body),
  /** Eval runs of an agent (docs/server.md): list, start, read, a cell's drill-down, cancel, compare. */
  evalRuns: (agent, { limit, after } = {}, options) => {
    const query = new URLSearchParams();
    if (limit) query.set('limit', String(limit));
    if (after) query.set('after', after);
    const qs = query.toString();
    return call('GET', `${agentPath(agent)}/evals${qs ? `?${qs}` : ''}`, undefined, options);
  },
  startEvalRun: (agent, body) => call('POST', `${agentPath(agent)}/evals`, body),
  evalRun: (agent, run, options) => call('GET', `${agentPath(agent)}/evals/${encodeURIComponent(run)}`, undefined, options),
  evalCell: (agent, run, index, options) =>
    call('GET', `${agentPath(agent)}/evals/${encodeURIComponent(run)}/cells/${encodeURIComponent(String(index))}`, undefined, options),
  cancelEvalRun: (agent, run) => call('DELETE', `${agentPath(agent)}/evals/${encodeURIComponent(run)}`),
  /** `params`: base, candidate, and optionally suite and model; empty ones are left out. */
  compareEvals: (agent, params, options) => {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v) query.set(k, v);
    return call('GET', `${agentPath(agent)}/evals/compare?${query}`, undefined, options);
  },
  /** The cite endpoint's body is one JSON line (the sources and options), then the text. */
  cite: async (header, text) => {
    const response = await fetch('/v1/cite', {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.get()}`, 'Content-Type': 'application/x-ndjson' },
      body: `${JSON.stringify(header)}\n${text}`,
    });
    const answer = await response.text();
    if (!response.ok) {
      let problem = null;
      try { problem = JSON.parse(answer); } catch { problem = { detail: answer }; }
      throw new ApiError(response.status, problem);
    }
    return answer;
  },
};

/** A problem's located diagnostics as lines of text. */
export function problemLines(error) {
  const p = error.problem ?? {};
  const items = p.diagnostics ?? p.errors ?? [];
  const lines = items.map((d) => {
    const at = d.location ? `${d.location.file ?? ''}:${d.location.line ?? ''}:${d.location.column ?? ''} ` : '';
    return `${at}${d.message ?? JSON.stringify(d)}`;
  });
  return [error.message, ...lines];
}
