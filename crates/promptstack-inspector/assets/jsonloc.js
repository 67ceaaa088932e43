// A JSON reader that remembers the line of every value (by JSON Pointer), and a validator for the
// subset of JSON Schema the send schema uses, so the send editor can show each error at its line.

export class JsonError extends Error {
  constructor(message, line, column) {
    super(message);
    this.line = line;
    this.column = column;
  }
}

const escapePointer = (key) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Parses `text`; returns `{ value, lines }` where `lines` maps a JSON Pointer to its 1-based line. */
export function parseWithLines(text) {
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const lines = new Map();
  const fail = (message) => { throw new JsonError(message, line, i - lineStart + 1); };
  const ws = () => {
    for (;;) {
      const c = text[i];
      if (c === '\n') { line++; i++; lineStart = i; } else if (c === ' ' || c === '\t' || c === '\r') i++; else break;
    }
  };
  const literal = (word, value) => {
    if (text.startsWith(word, i)) { i += word.length; return value; }
    return fail(`unexpected ${text[i] === undefined ? 'end of input' : `character ${JSON.stringify(text[i])}`}`);
  };
  const string = () => {
    const start = i;
    i++;
    for (;;) {
      const c = text[i];
      if (c === undefined || c === '\n') fail('unterminated string');
      if (c === '\\') i += 2; else if (c === '"') { i++; break; } else i++;
    }
    try { return JSON.parse(text.slice(start, i)); } catch { return fail('invalid escape in string'); }
  };
  const value = (pointer) => {
    ws();
    lines.set(pointer, line);
    const c = text[i];
    if (c === '{') {
      i++;
      const out = {};
      ws();
      if (text[i] === '}') { i++; return out; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key in double quotes');
        const keyLine = line;
        const key = string();
        ws();
        if (text[i] !== ':') fail('expected `:` after the key');
        i++;
        const p = `${pointer}/${escapePointer(key)}`;
        if (Object.prototype.hasOwnProperty.call(out, key)) { line = keyLine; fail(`duplicate key ${JSON.stringify(key)}`); }
        out[key] = value(p);
        lines.set(p, Math.min(lines.get(p), keyLine));
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return out; }
        fail('expected `,` or `}`');
      }
    }
    if (c === '[') {
      i++;
      const out = [];
      ws();
      if (text[i] === ']') { i++; return out; }
      for (;;) {
        out.push(value(`${pointer}/${out.length}`));
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return out; }
        fail('expected `,` or `]`');
      }
    }
    if (c === '"') return string();
    if (c === 't') return literal('true', true);
    if (c === 'f') return literal('false', false);
    if (c === 'n') return literal('null', null);
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
    if (!m) fail(c === undefined ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
    i += m[0].length;
    return Number(m[0]);
  };
  const result = value('');
  ws();
  if (i < text.length) fail('unexpected text after the value');
  return { value: result, lines };
}

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array'
  : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v);

/** Errors of `value` against `schema` (JSON Schema subset): `[{ pointer, message }]`. */
export function validate(schema, value, root = schema, pointer = '') {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [{ pointer, message: 'no value is allowed here' }];
  if (schema.$ref) {
    const target = schema.$ref.replace(/^#\//, '').split('/').reduce((s, k) => s?.[k], root);
    return validate(target, value, root, pointer);
  }
  const errors = [];
  const t = typeOf(value);
  if (schema.type) {
    const types = [].concat(schema.type);
    if (!types.includes(t) && !(t === 'integer' && types.includes('number'))) {
      return [{ pointer, message: `expected ${types.join(' or ')}, found ${t}` }];
    }
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push({ pointer, message: `expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}` });
  }
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) {
    errors.push({ pointer, message: `expected ${JSON.stringify(schema.const)}` });
  }
  for (const key of ['anyOf', 'oneOf']) {
    if (schema[key] && !schema[key].some((s) => validate(s, value, root, pointer).length === 0)) {
      const nested = schema[key].map((s) => validate(s, value, root, pointer));
      const best = nested.reduce((a, b) => (b.length < a.length ? b : a));
      errors.push(...(best.length ? best : [{ pointer, message: 'matches none of the allowed shapes' }]));
    }
  }
  for (const s of schema.allOf ?? []) errors.push(...validate(s, value, root, pointer));
  if (t === 'number' || t === 'integer') {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push({ pointer, message: `must be at least ${schema.minimum}` });
    if (schema.maximum !== undefined && value > schema.maximum) errors.push({ pointer, message: `must be at most ${schema.maximum}` });
  }
  if (t === 'object') {
    for (const key of schema.required ?? []) {
      if (!(key in value)) errors.push({ pointer, message: `missing field \`${key}\`` });
    }
    const props = schema.properties ?? {};
    for (const [key, v] of Object.entries(value)) {
      const p = `${pointer}/${escapePointer(key)}`;
      if (key in props) errors.push(...validate(props[key], v, root, p));
      else if (schema.additionalProperties === false) errors.push({ pointer: p, message: `unknown field \`${key}\`` });
      else if (typeof schema.additionalProperties === 'object') errors.push(...validate(schema.additionalProperties, v, root, p));
    }
  }
  if (t === 'array' && schema.items) {
    value.forEach((v, k) => errors.push(...validate(schema.items, v, root, `${pointer}/${k}`)));
  }
  return errors;
}

/** The line of `pointer`, or of its nearest parent that has one. */
export function lineOf(lines, pointer) {
  for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
    if (lines.has(p)) return lines.get(p);
    if (p === '') return 1;
  }
}
