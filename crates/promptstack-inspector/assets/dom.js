// A few lines of DOM building: `h('tag.class', {attr: value, onclick: fn}, ...children)`.

export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag);
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** Replaces the children of the element with id `id`. */
export function fill(id, ...children) {
  const el = document.getElementById(id);
  el.replaceChildren(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element, the way `h` builds HTML ones: `svg('rect', {x: 1, class: 'bar'}, ...children)`.
 * Text goes in with `text` or as string children, never as markup.
 */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}
