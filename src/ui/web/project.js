// project.js - the Project page (callsight ui --project DIR): the project's
// trace.config in an editor; what a draft selects, as `callsight scan`
// prints it, redrawn as you type; a function's subtree as `callsight
// select` lists it, with its include-func line to add; and a save that
// shows the diff against the file as loaded first, and is refused if the
// file changed on disk since.
import { h } from './dom.js';
import { get } from './api.js';

// A POST of the draft: the changes need the token GET api/project gave.
async function post(what, token, body, base) {
  const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Callsight-Token': token };
  if (base !== undefined) headers['X-Callsight-Base'] = base;
  const r = await fetch('api/project/' + what, { method: 'POST', headers, body, cache: 'no-store' });
  let j;
  try {
    j = await r.json();
  } catch (e) {
    throw new Error(`api/project/${what}: HTTP ${r.status}, not JSON`);
  }
  if (!r.ok) throw new Error(j && j.error ? j.error : `api/project/${what}: HTTP ${r.status}`);
  return j;
}

// The lines of a and b as a diff: [' ', line], ['-', line], ['+', line],
// from their longest common subsequence (trace.config is short: at most
// 64 KiB, a few hundred lines in practice).
export function lineDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  if (x.length * y.length > 4e6) return [...x.map((l) => ['-', l]), ...y.map((l) => ['+', l])];
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) out.push([' ', x[i++]]), j++;
    else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) out.push(['+', y[j++]]);
    else out.push(['-', x[i++]]);
  }
  return out;
}

function scanLines(pre, text) {
  pre.replaceChildren(...text.split('\n').filter((l, k, all) => l !== '' || k < all.length - 1).map((l) => {
    const w = l.trim().split(/\s+/)[0];
    return h('div', { class: w === 'on' ? 'on' : w === 'off' ? 'off' : null }, l);
  }));
}

export async function render() {
  const p = await get('project');
  let base = p.version, loaded = p.config;
  const editor = h('textarea', { id: 'config', spellcheck: 'false', rows: 18, cols: 70 });
  editor.value = p.config;
  const preview = h('pre', { id: 'preview' });
  const status = h('span', { id: 'status' });
  const diffBox = h('div', { id: 'diffbox', hidden: true });

  let seq = 0, timer = null;
  async function refresh() {
    const mine = ++seq;
    try {
      const r = await post('preview', p.token, editor.value);
      if (mine !== seq) return;
      scanLines(preview, r.output);
      preview.dataset.status = r.status;
    } catch (e) {
      if (mine === seq) preview.replaceChildren(h('span', { class: 'error' }, String(e.message || e)));
    }
    if (mine === seq) preview.dataset.done = String(mine);
  }
  editor.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  });

  const fn = h('input', { id: 'subfunc', type: 'search', placeholder: 'function (ns::f or file.c:f)' });
  const depth = h('input', { id: 'subdepth', class: 'narrow', type: 'number', min: 0, placeholder: 'depth' });
  const subOut = h('pre', { id: 'subtree' });
  const addLine = h('button', { id: 'addline', disabled: true }, 'Add the line');
  let line = '';
  async function subtree() {
    const q = { function: fn.value };
    if (depth.value !== '') q.depth = depth.value;
    try {
      const r = await get('project/select', q, { 'X-Callsight-Token': p.token });
      subOut.textContent = r.output;
      line = r.status === 0 ? 'include-func ' + fn.value + (depth.value !== '' ? ' ' + depth.value : '') : '';
    } catch (e) {
      subOut.textContent = String(e.message || e);
      line = '';
    }
    addLine.disabled = !line;
    subOut.dataset.done = '1';
  }
  addLine.addEventListener('click', () => {
    const v = editor.value;
    editor.value = v + (v === '' || v.endsWith('\n') ? '' : '\n') + line + '\n';
    refresh();
  });

  function showDiff() {
    const d = lineDiff(loaded, editor.value);
    const changed = d.some(([k]) => k !== ' ');
    const rows = d.map(([k, l]) => h('div', { class: k === '+' ? 'add' : k === '-' ? 'del' : null }, k + ' ' + l));
    diffBox.replaceChildren(
      h('h2', {}, changed ? 'Save these changes to trace.config?' : 'No change to save'),
      h('pre', { id: 'diff' }, rows),
      h('div', { class: 'toolbar' },
        changed ? h('button', { id: 'confirm', onclick: save }, 'Save') : null,
        h('button', { id: 'cancel', onclick: () => { diffBox.hidden = true; } }, 'Cancel')));
    diffBox.hidden = false;
  }
  async function save() {
    try {
      const r = await post('save', p.token, editor.value, base);
      base = r.version;
      loaded = editor.value;
      status.textContent = `saved (${r.bytes} bytes)`;
      status.className = '';
    } catch (e) {
      status.textContent = String(e.message || e);
      status.className = 'error';
    }
    diffBox.hidden = true;
  }

  const page = h('section', {},
    h('h1', {}, 'Project'),
    h('p', { class: 'mono', id: 'dir' }, p.dir + '/trace.config' + (p.exists ? '' : ' (none yet: every source is selected)')),
    h('div', { class: 'cols' },
      h('div', {},
        editor,
        h('div', { class: 'toolbar' }, h('button', { id: 'save', onclick: showDiff }, 'Save…'), status),
        diffBox,
        h('h2', {}, 'A function and what it calls'),
        h('div', { class: 'toolbar' }, fn, depth, h('button', { id: 'subgo', onclick: subtree }, 'Show'), addLine),
        subOut),
      h('div', {}, h('h2', {}, 'What this draft selects (callsight scan)'), preview)));
  await refresh();
  return page;
}
