/*
 * out_svg.c - the flame graph (see out_svg.h).
 *
 * The tree is walked depth first with children in a stable order; a box's
 * x is its parent's x plus the widths of the siblings before it, all in
 * nanoseconds (data-x, data-w) and in pixels for the first view.  The
 * script only recomputes pixels from those attributes when zooming.
 */
#include "out_svg.h"

#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"

#define SVG_WIDTH 1200
#define SVG_PAD 10     /* left and right margins */
#define SVG_FRAME 16   /* height of one row */
#define SVG_TOP 44     /* title, subtitle and buttons */
#define SVG_BOTTOM 24  /* the details line */
#define SVG_CHAR_PX 7.2 /* width of one character of 12px monospace */

static const char svg_style[] =
    "<style>\n"
    "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
    ".f text { pointer-events: none; }\n"
    ".f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
    ".f.anc rect { opacity: 0.55; }\n"
    ".f.hide { display: none; }\n"
    "#title { font-size: 17px; }\n"
    ".btn { cursor: pointer; fill: #333; }\n"
    ".btn:hover { fill: #c00; }\n"
    "</style>\n";

/* Keep this script plain ES5: it is all the interactivity there is. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var W = 1200, PAD = 10, CH = 7.2, fr, details, matched, unzoom, total;\n"
    "function num(g, a) { return Number(g.getAttribute(a)); }\n"
    "function init() {\n"
    "  fr = document.getElementById('frames').getElementsByTagName('g');\n"
    "  details = document.getElementById('details');\n"
    "  matched = document.getElementById('matched');\n"
    "  unzoom = document.getElementById('unzoom');\n"
    "  total = num(fr[0], 'data-w');\n"
    "  for (var i = 0; i < fr.length; i++) {\n"
    "    fr[i].onmouseover = function () { details.textContent = this.getAttribute('data-info'); };\n"
    "    fr[i].onmouseout = function () { details.textContent = ' '; };\n"
    "    fr[i].onclick = function () { zoom(this); };\n"
    "  }\n"
    "  var h = decodeURIComponent(location.hash || '');\n"
    "  var m = /[#&]zoom=(\\d+)/.exec(h);\n"
    "  if (m && fr[Number(m[1])]) zoom(fr[Number(m[1])]);\n"
    "  m = /[#&]search=([^&]*)/.exec(h);\n"
    "  if (m) search(m[1]);\n"
    "}\n"
    "function fit(g, px) {\n"
    "  var t = g.getElementsByTagName('text')[0], name = g.getAttribute('data-n');\n"
    "  var n = Math.floor((px - 6) / CH);\n"
    "  t.textContent = n >= name.length ? name : n > 2 ? name.substr(0, n - 2) + '..' : '';\n"
    "}\n"
    "function place(g, x, w) {\n"
    "  var r = g.getElementsByTagName('rect')[0], t = g.getElementsByTagName('text')[0];\n"
    "  r.setAttribute('x', x.toFixed(2));\n"
    "  r.setAttribute('width', Math.max(w, 0).toFixed(2));\n"
    "  t.setAttribute('x', (x + 3).toFixed(2));\n"
    "  fit(g, w);\n"
    "}\n"
    "function zoom(z) {\n"
    "  var zx = num(z, 'data-x'), zw = num(z, 'data-w'), zd = num(z, 'data-d');\n"
    "  var scale = (W - 2 * PAD) / (zw || 1);\n"
    "  for (var i = 0; i < fr.length; i++) {\n"
    "    var g = fr[i], x = num(g, 'data-x'), w = num(g, 'data-w'), d = num(g, 'data-d');\n"
    "    g.classList.remove('hide');\n"
    "    g.classList.remove('anc');\n"
    "    if (x + w <= zx || x >= zx + zw) { g.classList.add('hide'); continue; }\n"
    "    if (d < zd) { g.classList.add('anc'); place(g, PAD, W - 2 * PAD); continue; }\n"
    "    place(g, PAD + (x - zx) * scale, w * scale);\n"
    "  }\n"
    "  unzoom.style.opacity = zd > 0 ? 1 : 0;\n"
    "}\n"
    "function search(term) {\n"
    "  if (term === undefined) term = prompt('Search (regular expression)', '');\n"
    "  if (term === null) return;\n"
    "  var re;\n"
    "  try { re = new RegExp(term); } catch (e) { matched.textContent = 'bad expression'; return; }\n"
    "  var covered = 0, end = -1, hits = 0;\n"
    "  for (var i = 0; i < fr.length; i++) {\n"
    "    var g = fr[i], r = g.getElementsByTagName('rect')[0], x = num(g, 'data-x');\n"
    "    var hit = term !== '' && re.test(g.getAttribute('data-n'));\n"
    "    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : g.getAttribute('data-fill'));\n"
    "    if (!hit) continue;\n"
    "    hits++;\n"
    "    if (x >= end) { covered += num(g, 'data-w'); end = x + num(g, 'data-w'); }\n"
    "  }\n"
    "  matched.textContent = term === '' ? ' ' :\n"
    "    'Matched: ' + hits + ' boxes, ' + (100 * covered / (total || 1)).toFixed(1) + '%';\n"
    "}\n"
    "]]></script>\n";

struct layout {
    const struct out_view *v;
    uint32_t *order, *depth;
    long n;
    uint64_t *total;  /* subtree self time, by node */
    uint64_t *xs;     /* x of the next child, by depth */
    uint32_t max_depth;
    int height;
};


/* A warm colour from the name, so a function looks the same everywhere;
 * threads blue, the root and the catch-alls grey. */
static void fill_of(const struct cctree_node *n, const char *label, char *buf, size_t len)
{
    uint32_t h = 2166136261u;
    for (const char *p = label; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    if (n->kind == CCTREE_FUNC)
        snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, 60 + (h >> 8) % 150, 20 + (h >> 16) % 50);
    else if (n->kind == CCTREE_THREAD)
        snprintf(buf, len, "rgb(%u,%u,230)", 110 + h % 40, 150 + (h >> 8) % 50);
    else
        snprintf(buf, len, "rgb(200,200,200)");
}

/* Name, file:line, times and calls, for the hover line and <title>. */
static void describe(const struct layout *l, uint32_t id, const char *label, char *buf, size_t len)
{
    const struct cctree_node *n = &l->v->tree->v[id];
    char where[512] = "";
    const struct symbol *sym = n->kind == CCTREE_FUNC && l->v->funcs ? &l->v->funcs[n->key] : NULL;
    if (sym && sym->file && sym->line) {
        const char *base = strrchr(sym->file, '/');
        snprintf(where, sizeof where, " (%s:%lu)", base ? base + 1 : sym->file, sym->line);
    }
    double pct = l->total[0] ? 100.0 * (double)l->total[id] / (double)l->total[0] : 0;
    if (n->kind == CCTREE_FUNC || n->kind == CCTREE_LOST || n->kind == CCTREE_OTHER)
        snprintf(buf, len, "%s%s: %.3f ms, %.1f%%, self %.3f ms, %llu calls", label, where,
                 (double)l->total[id] / 1e6, pct, (double)n->self_ns / 1e6,
                 (unsigned long long)n->calls);
    else
        snprintf(buf, len, "%s: %.3f ms, %.1f%%", label, (double)l->total[id] / 1e6, pct);
}

static void write_box(FILE *out, struct layout *l, long i)
{
    uint32_t id = l->order[i], d = l->depth[i];
    const struct cctree_node *n = &l->v->tree->v[id];
    char label[1024], info[1600], fill[32];
    uint64_t x = l->xs[d], w = l->total[id];
    l->xs[d] += w;
    l->xs[d + 1] = x;
    out_node_label(l->v, id, label, sizeof label);
    describe(l, id, label, info, sizeof info);
    fill_of(n, label, fill, sizeof fill);
    double scale = (double)(SVG_WIDTH - 2 * SVG_PAD) / (double)(l->total[0] ? l->total[0] : 1);
    double px = SVG_PAD + (double)x * scale, pw = (double)w * scale;
    int y = l->height - SVG_BOTTOM - (int)(d + 1) * SVG_FRAME;
    fprintf(out, "<g class=\"f\" data-x=\"%llu\" data-w=\"%llu\" data-d=\"%u\" data-fill=\"%s\" data-n=\"",
            (unsigned long long)x, (unsigned long long)w, d, fill);
    textesc_put_xml(out, label);
    fputs("\" data-info=\"", out);
    textesc_put_xml(out, info);
    fputs("\"><title>", out);
    textesc_put_xml(out, info);
    fprintf(out, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
            px, y, pw, SVG_FRAME - 1, fill);
    int chars = (int)((pw - 6) / SVG_CHAR_PX);
    fprintf(out, "<text x=\"%.2f\" y=\"%d\">", px + 3, y + SVG_FRAME - 4);
    if ((size_t)chars >= strlen(label))
        textesc_put_xml(out, label);
    else if (chars > 2) {
        label[chars - 2] = 0;
        textesc_put_xml(out, label);
        fputs("..", out);
    }
    fputs("</text></g>\n", out);
}

static void write_head(FILE *out, const struct layout *l)
{
    const struct analysis *a = l->v->a;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" onload=\"init()\">\n",
            SVG_WIDTH, l->height, SVG_WIDTH, l->height);
    fputs(svg_style, out);
    fputs(svg_script, out);
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f4ec\"/>\n"
                 "<text id=\"title\" x=\"%d\" y=\"20\" text-anchor=\"middle\">callsight flame graph",
            SVG_WIDTH / 2);
    if (l->v->title) {
        fputs(": ", out);
        textesc_put_xml(out, l->v->title);
    }
    fprintf(out, "</text>\n<text x=\"%d\" y=\"36\" text-anchor=\"middle\">%llu calls, %.3f ms in "
                 "%llu threads; width = inclusive time; click to zoom",
            SVG_WIDTH / 2, (unsigned long long)a->calls_selected, (double)l->total[0] / 1e6,
            (unsigned long long)a->threads_with_events);
    if (l->v->tree->overflow)
        fprintf(out, "; %llu calls beyond %zu stacks are under [other stacks]",
                (unsigned long long)l->v->tree->overflow, l->v->tree->max_nodes);
    fputs("</text>\n", out);
    fprintf(out, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"20\" style=\"opacity:0\" "
                 "onclick=\"zoom(fr[0])\">Reset zoom</text>\n"
                 "<text id=\"searchbtn\" class=\"btn\" x=\"%d\" y=\"20\" text-anchor=\"end\" "
                 "onclick=\"search()\">Search</text>\n"
                 "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
                 "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
            SVG_PAD, SVG_WIDTH - SVG_PAD, SVG_PAD, l->height - 8, SVG_WIDTH - SVG_PAD,
            l->height - 8);
}

static int layout_init(struct layout *l, const struct out_view *v)
{
    memset(l, 0, sizeof *l);
    l->v = v;
    l->n = out_tree_order(v, &l->order, &l->depth);
    l->total = cctree_totals(v->tree);
    l->xs = calloc(v->tree->n + 2, sizeof *l->xs);
    if (l->n < 0 || !l->total || !l->xs)
        return -1;
    for (long i = 0; i < l->n; i++)
        if (l->total[l->order[i]] && l->depth[i] > l->max_depth)
            l->max_depth = l->depth[i];
    l->height = SVG_TOP + SVG_BOTTOM + (int)(l->max_depth + 1) * SVG_FRAME;
    return 0;
}

static void layout_free(struct layout *l)
{
    free(l->order);
    free(l->depth);
    free(l->total);
    free(l->xs);
}

int out_svg_write(FILE *out, const struct out_view *v)
{
    struct layout l;
    if (layout_init(&l, v) < 0) {
        layout_free(&l);
        return -1;
    }
    write_head(out, &l);
    fputs("<g id=\"frames\">\n", out);
    for (long i = 0; i < l.n; i++)
        if (l.total[l.order[i]] || i == 0)
            write_box(out, &l, i);
    fputs("</g>\n</svg>\n", out);
    layout_free(&l);
    return 0;
}
