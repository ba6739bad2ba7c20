// common/gnuplot.h: PNGs drawn by gnuplot from a script the caller wrote (ppo-eval's equity.png,
// ppo-bench all's scaling plots), published as every other output is (atomic_file.h).
//
// The script draws into the file named by its variable `out`, which it sets to the PNG's own name
// when unset ("if (!exists('out')) out = 'NAME.png'"), so that `gnuplot SCRIPT` in its directory
// redraws the PNG by hand; gnuplot_render sets `out` to the PNG's per-process temporary name (two
// programs drawing into one directory do not share it) and renames the result into place.
// Depends on atomic_file.h and error.h.
#ifndef PPO_COMMON_GNUPLOT_H
#define PPO_COMMON_GNUPLOT_H

#include <stdbool.h>
#include <stddef.h>

// text as a single-quoted gnuplot string, quotes included, into out: a quote inside is doubled
// (gnuplot's escape in single quotes), a control character (a newline would end the command) is a
// space. A text too long for capacity is cut at a whole character and still closed; returns false then.
bool gnuplot_quote(char *out, size_t capacity, const char *text);

// Runs `gnuplot -e "out='.PNG.tmp.PID'" SCRIPT` in dir (script and png: file names in dir; stdout to
// /dev/null, gnuplot's errors on stderr), then renames the temporary file over dir/png. Returns 0,
// or -1 and sets the error message (gnuplot not installed or failed, with how to redraw by hand; or
// the rename's). On failure the temporary file is removed, and so is an older dir/png: it would
// show an earlier run beside this run's files.
int gnuplot_render(const char *dir, const char *script, const char *png);

#endif
