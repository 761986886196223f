// diff.js - the Diff page: two traces' reports compared by `callsight
// diff` (api/diff runs it on analyze's JSON of each), its rows largest
// change first, those over the threshold marked REGRESSED and shown first.
import { h, link } from './dom.js';
import { get } from './api.js';

function choice(id, options, value) {
  return h('select', { id }, options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
}

export async function render(params) {
  const { traces } = await get('traces');
  const names = traces.map((t) => [t.name, t.path]);
  const a = params.get('a') ?? (names[0] || [''])[0];
  const b = params.get('b') ?? (names[1] || names[0] || [''])[0];
  const key = params.get('key') || 'self';
  const fail = params.get('fail') || '';
  const sa = choice('base', names, a), sb = choice('new', names, b);
  const sk = choice('key', [['self', 'self time'], ['incl', 'inclusive time'], ['calls', 'calls'], ['p99', 'p99']], key);
  const sf = h('input', { id: 'fail', type: 'number', min: 0, placeholder: '% to flag', value: fail, class: 'narrow' });
  const go = () => {
    const q = { a: sa.value, b: sb.value, key: sk.value };
    if (sf.value !== '') q.fail = sf.value;
    location.hash = link('diff', q);
  };
  const out = h('div', { id: 'diffout' });
  if (params.get('a') !== null && params.get('b') !== null) {
    const q = { a, b, key };
    if (fail !== '') q.fail = fail;
    const d = await get('diff', q);
    const lines = d.text.replace(/\n$/, '').split('\n');
    const body = lines.slice(1).filter((l) => l.trim());
    const head = body.slice(0, 1); // the column heads
    // Regressions first, then the rest in diff's order (largest change first).
    const regressed = body.slice(1).filter((l) => /REGRESSED$/.test(l));
    const rest = body.slice(1).filter((l) => !/REGRESSED$/.test(l));
    out.append(
      h('p', { class: 'mono', id: 'diffsummary' }, lines[0]),
      h('pre', { id: 'difftext' }, head.map((l) => l + '\n'),
        regressed.map((l) => h('span', { class: 'regressed' }, l + '\n')),
        rest.map((l) => l + '\n')));
  }
  return h('section', {},
    h('h1', {}, 'Diff'),
    h('div', { class: 'toolbar' }, 'base ', sa, ' new ', sb, ' by ', sk, ' flag over ', sf, ' %',
      h('button', { id: 'compare', onclick: go }, 'Compare')),
    out);
}
