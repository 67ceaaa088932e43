// The views: each takes the server's answers and returns DOM nodes. No state lives here.

import { h } from './dom.js';
import { parseWithLines } from './jsonloc.js';

const count = (t) => (t && typeof t === 'object' ? t.count : t) ?? 0;

/** An exclusion reason as a sentence fragment: `gate: when project is not none`. */
export function reasonText(reason) {
  if (!reason) return '';
  if (typeof reason === 'string') return reason;
  const { cause, ...rest } = reason;
  const detail = Object.entries(rest).map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('; ');
  return detail ? `${cause}: ${detail}` : String(cause);
}

function trustBadge(trust) {
  return h(`span.badge.trust.trust-${String(trust).replace(/[^a-z-]/g, '')}`, { text: trust });
}

/** Where the target's cacheable prefix ends: the id of the last system block inside it. */
export function prefixEnd(target) {
  if (!target?.parts) return null;
  let last = null;
  for (const part of target.parts) {
    if (part.slot === 'system' && part.range.end <= target.stable_prefix) last = part.id;
  }
  return last;
}

/** The blocks table: one row per block in order, with the two boundary lines. */
export function blocksView(explain, targetId, selected, onSelect) {
  const blocks = explain.assembly.blocks;
  const target = explain.targets.find((t) => t.target === targetId) ?? explain.targets[0];
  const inTarget = new Set((target?.parts ?? []).map((p) => p.id));
  const end = prefixEnd(target);
  const max = Math.max(1, ...blocks.map((b) => count(b.tokens)));
  const firstVolatile = blocks.findIndex((b) => b.stability === 'volatile' && b.state.state === 'included');
  const line = (cls, text) => h(`tr.boundary.${cls}`, {}, h('td', { colspan: 8 }, h('span', { text })));
  const rows = [];
  blocks.forEach((b, i) => {
    if (i === firstVolatile) rows.push(line('volatile-line', 'stable ↑ / volatile ↓: later blocks change from send to send'));
    const included = b.state.state === 'included';
    const tokens = count(b.tokens);
    rows.push(h(`tr.block${included ? '' : '.excluded'}${selected === b.id ? '.selected' : ''}`, { dataset: { block: b.id } },
      h('td', { text: String(i + 1) }),
      h('td', {}, h('button.link', { type: 'button', 'aria-pressed': String(selected === b.id), onclick: () => onSelect(b.id) }, b.id)),
      h('td', { text: b.kind }),
      h('td', {}, trustBadge(b.trust)),
      h('td', { text: b.stability }),
      h('td.tokens', {}, h('span.bar', { style: `width:${Math.round((tokens / max) * 70)}%`, 'aria-hidden': 'true' }), h('span.num', { text: String(tokens) })),
      h('td.state', {}, included
        ? h('span', { text: inTarget.size && !inTarget.has(b.id) ? 'included (not in this target)' : 'included' })
        : h('span', {}, h('strong', { text: 'excluded' }), ' — ', h('span.reason', { text: reasonText(b.state.reason) }))),
      h('td', { text: b.override ?? '' })));
    if (end && b.id === end) rows.push(line('prefix-line', `end of the cacheable prefix of target ${target.target} (${target.stable_prefix} bytes of system text)`));
  });
  return h('table.blocks', {},
    h('caption', { text: `${blocks.length} blocks, ${blocks.filter((b) => b.state.state !== 'included').length} excluded; click a block id for its text and origin` }),
    h('thead', {}, h('tr', {}, ...['#', 'block', 'kind', 'trust', 'stability', 'tokens', 'included', 'override'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, rows));
}

/** The template source of a block: the bundle's spec lines from its origin to the next table. */
export function templateSource(bundle, origin) {
  const loc = origin?.location;
  if (!bundle || !loc?.line) return null;
  const file = String(loc.file ?? '');
  const text = file.endsWith('agent.toml') || file.endsWith('agent.json') || !bundle.files?.[file]
    ? bundle.spec : bundle.files[file];
  if (typeof text !== 'string') return null;
  const lines = text.split('\n');
  const out = [];
  for (let i = loc.line - 1; i < lines.length && out.length < 80; i++) {
    if (out.length && /^\[/.test(lines[i])) break;
    out.push(lines[i]);
  }
  while (out.length && out[out.length - 1].trim() === '') out.pop();
  return out.join('\n');
}

export function blockDetail(block, bundle) {
  if (!block) return h('p.hint', { text: 'Select a block to see its text, origin and template source.' });
  const loc = block.origin?.location;
  const where = loc ? `${loc.file}:${loc.line}` : (block.origin?.path ?? block.origin?.kind ?? 'generated');
  const source = templateSource(bundle, block.origin);
  return h('div.detail', {},
    h('h3', { text: `Block ${block.id}` }),
    h('p', {}, 'Origin: ', h('code.origin', { text: where }), block.origin?.path ? ` (${block.origin.path})` : ''),
    block.state.state !== 'included' ? h('p', { text: `Excluded — ${reasonText(block.state.reason)}` }) : null,
    h('h4', { text: 'Text as sent' }),
    h('pre.text', { text: block.text || '(empty)' }),
    h('h4', { text: 'Template source' }),
    h('pre.source', { text: source ?? '(not in the bundle: an injected or generated block)' }));
}

/** The target's system and user text, split at block boundaries; hover links text and block. */
export function textView(explain, targetId) {
  const target = explain.targets.find((t) => t.target === targetId) ?? explain.targets[0];
  if (!target) return h('p', { text: 'No target.' });
  const slot = (name, text) => {
    const parts = (target.parts ?? []).filter((p) => p.slot === name).sort((a, b) => a.range.start - b.range.start);
    const enc = new TextEncoder();
    const bytes = enc.encode(text ?? '');
    const dec = new TextDecoder();
    const nodes = [];
    let at = 0;
    for (const p of parts) {
      if (p.range.start > at) nodes.push(dec.decode(bytes.slice(at, p.range.start)));
      nodes.push(h(`span.seg.trust-${p.trust}`, { dataset: { block: p.id }, tabindex: '0', title: `${p.id} · ${p.trust} · ${p.stability}` },
        dec.decode(bytes.slice(p.range.start, p.range.end))));
      at = p.range.end;
    }
    if (at < bytes.length) nodes.push(dec.decode(bytes.slice(at)));
    return h('section', {}, h('h3', { text: `${name === 'system' ? 'System text' : 'User-slot text'} (${count(target[`${name}_tokens`])} tokens)` }),
      h('pre.prompt', {}, nodes.length ? nodes : '(empty)'));
  };
  const ids = [...new Set((target.parts ?? []).map((p) => p.id))];
  return h('div.textview', {},
    h('ul.blocklist', { 'aria-label': 'Blocks of this target' }, ids.map((id) => h('li', { dataset: { block: id }, tabindex: '0', text: id }))),
    h('div', {}, slot('system', target.system), slot('user', target.user)));
}

/** Pretty request body with its breakpoints marked, the cost line and the fingerprints. */
export function requestView(answer) {
  const detail = answer.detail ?? {};
  const plan = detail.plan ?? {};
  let pretty = answer.body ?? '';
  try { pretty = JSON.stringify(JSON.parse(answer.body), null, 2); } catch { /* shown as sent */ }
  let lines = new Map();
  try { lines = parseWithLines(pretty).lines; } catch { /* no marks */ }
  const marks = new Map();
  (plan.breakpoints ?? []).forEach((bp, k) => {
    const line = lines.get(bp.at);
    if (line) marks.set(line, [...(marks.get(line) ?? []), `breakpoint ${k + 1}: ${bp.boundary}, ttl ${bp.ttl}, ${bp.prefix_tokens} tokens`]);
  });
  const body = pretty.split('\n').map((text, i) => {
    const m = marks.get(i + 1);
    return m ? h('mark.bp', { title: m.join('; ') }, text, h('span.bp-label', { text: `  ◀ ${m.join('; ')}` }), '\n') : `${text}\n`;
  });
  const cost = (name, c) => (c ? `${name}: ${c.read} read, ${c.written} written, ${c.uncached} uncached — ${c.relative}× the uncached price` : '');
  return h('div', {},
    h('p.costline', { text: `${detail.format ?? ''} · model ${detail.model ?? ''} · ${plan.total_tokens ?? '?'} input tokens · ${cost('first send', plan.cold)} · ${cost('repeat', plan.repeat)}` }),
    h('table.fingerprints', {}, h('caption', { text: 'Cache breakpoints' }),
      h('thead', {}, h('tr', {}, ['#', 'at', 'boundary', 'ttl', 'prefix tokens', 'fingerprint'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, (plan.breakpoints ?? []).map((bp, k) => h('tr.breakpoint', {},
        h('td', { text: String(k + 1) }), h('td', {}, h('code', { text: bp.at })), h('td', { text: bp.boundary }),
        h('td', { text: bp.ttl ?? '' }), h('td', { text: String(bp.prefix_tokens) }), h('td', {}, h('code.fp', { text: bp.fingerprint })))),
        (plan.skipped ?? []).map((s) => h('tr.skipped', {}, h('td', { text: '–' }), h('td', { text: 'skipped' }), h('td', { text: s.boundary }),
          h('td', { text: '' }), h('td', { text: String(s.prefix_tokens) }), h('td', { text: s.reason }))))),
    h('pre.body', { tabindex: '0', 'aria-label': 'Request body' }, body));
}

export function toolsView(answer) {
  // The rows of `promptstack tools --json`: every tool, offered or left out, with its origin and why.
  const rows = answer.detail?.tools ?? [];
  const origin = (t) => (t.origin === 'local' ? 'local' : `MCP server ${t.origin}${t.mcp_tool ? ` (${t.mcp_tool})` : ''}`);
  const table = (tag, caption, list, why) => h(tag, {}, h('caption', { text: caption }),
    h('thead', {}, h('tr', {}, ['tool', 'origin', why].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, list.map((t) => h('tr', {}, h('td', {}, h('code', { text: t.name })), h('td', { text: origin(t) }), h('td.reason', { text: t.why })))));
  const offered = rows.filter((t) => t.offered);
  const left = rows.filter((t) => !t.offered);
  return h('div', {},
    table('table.tools', `${offered.length} tools offered`, offered, 'why'),
    table('table.tools.excluded', `${left.length} tools left out`, left, 'reason'));
}

export function diffView(answer) {
  const d = answer.detail ?? {};
  const where = (x) => (x ? Object.entries(x).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ') : 'identical');
  const divergent = d.system?.block ?? d.system?.id ?? d.system?.first_block ?? null;
  const breakpoints = d.breakpoints ?? [];
  const surviving = breakpoints.filter((b) => b.survives).length;
  return h('div', {},
    h('p', {}, h('strong', { text: 'System text: ' }), h(`span${d.system ? '.diverges' : ''}`, { text: where(d.system) })),
    divergent ? h('p.divergent', {}, 'First divergent block: ', h('mark', { text: String(divergent) })) : null,
    h('p', {}, h('strong', { text: 'Request: ' }), h('span', { text: where(d.request) })),
    h('p.survival', { text: `${surviving} of ${breakpoints.length} breakpoints survive.` }),
    h('table', {}, h('caption', { text: `Breakpoints of the first request (${d.format ?? ''}, target ${d.target ?? ''})` }),
      h('thead', {}, h('tr', {}, ['breakpoint', 'survives'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, breakpoints.map((b) => h('tr', {},
        h('td', {}, h('code', { text: `${b.at ?? b.boundary ?? ''} ${b.boundary ?? ''}`.trim() })),
        h('td', { text: b.survives ? 'survives' : `broken${b.reason ? ` — ${b.reason}` : ''}` }))))));
}
