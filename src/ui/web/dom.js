// dom.js - building the pages' elements.  Every string from a trace (a
// function's, a file's, a thread's name) goes in as text, never as HTML:
// h() sets textContent and attributes, nothing here touches innerHTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// A duration in nanoseconds, as analyze's text report writes it: the unit
// that keeps three significant figures or more.
export function ns(v) {
  if (v === null || v === undefined) return '';
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(3) + ' s';
  if (a >= 1e6) return (v / 1e6).toFixed(3) + ' ms';
  if (a >= 1e3) return (v / 1e3).toFixed(3) + ' us';
  return v + ' ns';
}

export function count(v) {
  return v === null || v === undefined ? '' : Number(v).toLocaleString('en-US');
}

// A link to a page of this app: #/page?k=v&...
export function link(page, params) {
  return '#/' + page + '?' + new URLSearchParams(params).toString();
}
