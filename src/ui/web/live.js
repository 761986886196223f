// live.js - the Live page: a trace directory as `callsight top` shows it,
// a frame a second over server-sent events (api/live), drawn as text.
import { h } from './dom.js';

export async function render(params) {
  const t = params.get('t');
  const pre = h('pre', { id: 'frame', 'data-frames': 0 }, 'Waiting for the first frame…');
  const status = h('p', { id: 'livestatus', class: 'mono' }, 'connecting');
  const es = new EventSource('api/live?' + new URLSearchParams({ t }).toString());
  let frames = 0;
  es.addEventListener('frame', (e) => {
    if (!document.body.contains(pre)) { es.close(); return; }
    frames++;
    pre.textContent = e.data;
    pre.dataset.frames = frames;
    status.textContent = `frame ${frames} at ${new Date().toLocaleTimeString()}`;
  });
  es.addEventListener('error', () => { status.textContent = 'disconnected: retrying'; });
  window.addEventListener('hashchange', () => es.close(), { once: true });
  return h('section', {}, h('h1', {}, 'Live'), status, pre);
}
