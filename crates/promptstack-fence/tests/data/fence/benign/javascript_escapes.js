// Escaping HTML for safe insertion.
const ESCAPES = { "<": "\u003c", ">": "\u003e", "&": "\x26" };
export function escapeHtml(s) {
  return s.replace(/[<>&]/g, (c) => "&#" + c.charCodeAt(0) + ";");
}
const shifted = (1 << 30) >>> 0;
const tpl = `<ul>${items.map((i) => `<li>${escapeHtml(i)}</li>`).join("")}</ul>`;
console.log(JSON.stringify({ tag: "\u003cdiv\u003e", flags: 0x3c >> 2 }));
