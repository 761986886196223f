/*
 * out_svg.h - `--format svg`: an interactive flame graph in one
 * self-contained SVG file (inline CSS and script, no external script,
 * font or image).
 *
 * One box per calling-context node, its width the node's inclusive time
 * (the self time of its whole subtree), threads at the bottom, callees
 * stacked above their callers.  The geometry is computed here, so the file
 * shows the full graph even where scripts do not run (an <img> tag); in a
 * browser, hovering a box shows its name, file:line, time and calls,
 * clicking one zooms to it (click "Reset zoom" or the bottom box to go
 * back), and "Search" highlights the boxes whose names match a regular
 * expression and shows what share of the time they cover.  A URL fragment
 * does the same without a mouse: file.svg#search=REGEX, file.svg#zoom=N
 * (N-th box in document order, 0 = all).
 */
#ifndef CALLSIGHT_OUT_SVG_H
#define CALLSIGHT_OUT_SVG_H

#include <stdio.h>

#include "out.h"

/* 0 ok, -1 out of memory. */
int out_svg_write(FILE *out, const struct out_view *v);

#endif
