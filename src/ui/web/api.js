// api.js - the JSON API (docs/ui.md), by URLs relative to the page, so a
// token at the start of the page's path carries over to every request.

export async function get(what, params, headers) {
  const q = params ? '?' + new URLSearchParams(params).toString() : '';
  const r = await fetch('api/' + what + q, { cache: 'no-store', headers: headers || {} });
  let body;
  try {
    body = await r.json();
  } catch (e) {
    throw new Error(`api/${what}: HTTP ${r.status}, not JSON`);
  }
  if (!r.ok) throw new Error(body && body.error ? body.error : `api/${what}: HTTP ${r.status}`);
  return body;
}
