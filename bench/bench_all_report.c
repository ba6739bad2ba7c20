// bench/bench_all_report.c: the outputs of `ppo-bench all`: the scaling plots (gnuplot scripts with
// their data inline, run into PNGs), the JSON (common/json_writer.h) and the Markdown tables. Every
// file is written under a temporary name and renamed into place (common/atomic_file.h).
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_all.h"
#include "build_info.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/gnuplot.h"
#include "common/json_writer.h"
#include "ppo/trainer.h"

const StoredResult *result_find(const ResultList *list, const char *group, const char *name, const char *params) {
  for (int i = 0; i < list->count; i++) {
    const StoredResult *s = &list->items[i];
    if (strcmp(s->group, group) == 0 && strcmp(s->name, name) == 0 && strcmp(s->params, params) == 0) return s;
  }
  return NULL;
}

// --- plots ----------------------------------------------------------------------------------------------------

const char *bench_base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// The value of `key` in a "k=v,k=v" params string, as a number (NaN when absent).
static double param_number(const char *params, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = params; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, key, klen) == 0 && p[klen] == '=') return atof(p + klen + 1);
  return NAN;
}

// Writes <png>.gp (gnuplot; data inline) and runs gnuplot in the PNG's directory into a temporary
// name, renamed into place (common/gnuplot.h). The body writes the data blocks and plot commands after
// the terminal lines. On any failure a warning, and no PNG of that name (an older one would not match
// this run's results).
typedef void (*PlotBody)(FILE *out, const ResultList *list, const void *arg);

static int plot_write(PlotList *plots, const char *png, const char *title, PlotBody body, const ResultList *list,
                      const void *arg) {
  char gp[PATH_CAP_ALL + 8], dir[PATH_CAP_ALL], png_quoted[2 * PATH_CAP_ALL + 8];
  snprintf(gp, sizeof gp, "%.*s.gp", (int)(strlen(png) - 4), png);
  snprintf(dir, sizeof dir, "%s", png);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  gnuplot_quote(png_quoted, sizeof png_quoted, bench_base_name(png));  // --json OUT names it: any character
  AtomicFile af;
  FILE *out = atomic_file_open(&af, gp);
  if (out) {
    fprintf(out,
            "# %s: redraw %s with `gnuplot %s` in this directory (written by ppo-bench all, which sets out).\n"
            "if (!exists('out')) out = %s\n"
            "set terminal pngcairo size 1100,800 noenhanced\n"
            "set output out\n"
            "set grid\nset key outside right top\n",
            bench_base_name(gp), bench_base_name(png), bench_base_name(gp), png_quoted);
    body(out, list, arg);
  }
  if (!out || atomic_file_commit(&af) != 0) {
    fprintf(stderr, "ppo-bench all: %s\n", error_message());
    unlink(png);
    return -1;
  }
  if (gnuplot_render(dir, bench_base_name(gp), bench_base_name(png)) != 0) {
    fprintf(stderr, "ppo-bench all: warning: no %s: %s\n", png, error_message());
    return -1;
  }
  if (plots->count < 8) {  // the JSON and markdown list only the PNGs drawn (the script stays either way)
    snprintf(plots->items[plots->count].path, sizeof plots->items[0].path, "%s", png);
    snprintf(plots->items[plots->count].title, sizeof plots->items[0].title, "%s", title);
    plots->count++;
  }
  return 0;
}

// A data block of one scaling group: x (the params key), then median, min, max of each metric.
static void data_block(FILE *out, const ResultList *list, const char *block, const char *group, const char *key,
                       const char *const *metrics, int n_metrics) {
  fprintf(out, "$%s << EOD\n# %s", block, key);
  for (int k = 0; k < n_metrics; k++) fprintf(out, " %s(median min max)", metrics[k]);
  fprintf(out, "\n");
  for (int i = 0; i < list->count; i++) {
    const StoredResult *s = &list->items[i];
    if (strcmp(s->group, group) != 0 || strcmp(s->name, metrics[0]) != 0) continue;
    fprintf(out, "%g", param_number(s->params, key));
    for (int k = 0; k < n_metrics; k++) {
      const StoredResult *r = result_find(list, group, metrics[k], s->params);
      if (r)
        fprintf(out, " %.6g %.6g %.6g", r->median, r->min, r->max);
      else
        fprintf(out, " NaN NaN NaN");
    }
    fprintf(out, "\n");
  }
  fprintf(out, "EOD\n");
}

typedef struct {
  const char *group, *key, *xlabel;
  bool memory;  // a second panel with planned bytes and peak RSS
} ScalingPlot;

static void scaling_body(FILE *out, const ResultList *list, const void *arg) {
  const ScalingPlot *p = arg;
  static const char *const metrics[] = {"sps", "rollout_sps", "update_samples_per_s", "peak_rss", "planned_bytes"};
  data_block(out, list, "d", p->group, p->key, metrics, p->memory ? 5 : 4);
  fprintf(out,
          "set logscale x 2\nset xlabel '%s'\n"
          "%s"
          "set ylabel 'steps/s (update: samples/s)'\nset logscale y\n"
          "plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', "
          "$d using 1:5:6:7 with yerrorlines title 'rollout steps/s', "
          "$d using 1:8:9:10 with yerrorlines title 'update samples/s'\n",
          p->xlabel, p->memory ? "set multiplot layout 2,1\n" : "");
  if (p->memory)
    fprintf(out,
            "unset logscale y\nset ylabel 'MiB'\n"
            "plot $d using 1:11:12:13 with yerrorlines lw 2 title 'peak RSS', "
            "$d using 1:($14/1048576) with linespoints title 'planned (trainer_memory_plan)'\n"
            "unset multiplot\n");
}

static void split_body(FILE *out, const ResultList *list, const void *arg) {
  (void)arg;
  static const char *const metrics[] = {"rollout_share", "gae_share", "update_share"};
  data_block(out, list, "d", "scaling_envs", "n_envs", metrics, 3);
  fprintf(out,
          "set logscale x 2\nset xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'\n"
          "set ylabel '%% of the iteration time'\nset yrange [0:100]\n"
          "plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', "
          "$d using 1:5:6:7 with yerrorlines title 'GAE', "
          "$d using 1:8:9:10 with yerrorlines lw 2 title 'update'\n");
}

// Slab bytes against the parameter count, one line per slab (fp32 and the given precision's extra).
static void memory_body(FILE *out, const ResultList *list, const void *arg) {
  const char *precision = arg;
  char slabs[TRAINER_PLAN_MAX + 2][64];
  int n_slabs = 0;
  for (int i = 0; i < list->count; i++) {
    const StoredResult *s = &list->items[i];
    if (strcmp(s->group, "memory_plan") != 0 || strcmp(s->precision, precision) != 0) continue;
    int seen = 0;
    for (int k = 0; k < n_slabs; k++) seen |= strcmp(slabs[k], s->name) == 0;
    if (!seen && n_slabs < TRAINER_PLAN_MAX + 2) snprintf(slabs[n_slabs++], sizeof slabs[0], "%s", s->name);
  }
  for (int k = 0; k < n_slabs; k++) {
    fprintf(out, "$s%d << EOD\n# parameters bytes network\n", k);
    for (int i = 0; i < list->count; i++) {
      const StoredResult *s = &list->items[i];
      if (strcmp(s->group, "memory_plan") != 0 || strcmp(s->precision, precision) != 0 ||
          strcmp(s->name, slabs[k]) != 0)
        continue;
      const char *net = strstr(s->params, "network=");
      char label[64];
      snprintf(label, sizeof label, "%s", net ? net + 8 : "?");
      char *comma = strchr(label, ',');
      if (comma) *comma = '\0';
      fprintf(out, "%g %.0f %s\n", param_number(s->params, "parameters"), s->median > 0 ? s->median : 1, label);
    }
    fprintf(out, "EOD\n");
  }
  fprintf(out,
          "set logscale xy\nset xlabel 'policy parameters (actor + critic; network hidden sizes at the points)'\n"
          "set ylabel 'MiB'\nset format y '%%g'\nset key outside right top\n"
          "set title 'memory plan per slab, %s (configs/default.ini: 32 envs x 256 steps, batch 256)'\nplot ",
          precision);
  for (int k = 0; k < n_slabs; k++)
    fprintf(out, "%s$s%d using 1:($2/1048576) with linespoints lw %d dt %d title '%s'", k ? ", " : "", k,
            strncmp(slabs[k], "total", 5) == 0 ? 3 : 1, k / 8 + 1, slabs[k]);
  if (n_slabs) fprintf(out, ", $s0 using 1:($2/1048576):3 with labels offset 0,1 font ',8' notitle");
  fprintf(out, "\n");
}

int bench_all_plots(PlotList *plots, const ResultList *list, const char *prefix, bool scaling, bool memory) {
  int rc = 0;
  char png[PATH_CAP_ALL];
  if (scaling) {
    static const ScalingPlot envs = {"scaling_envs", "n_envs", "n_envs (n_steps 128, batch 256, 1 thread)", true};
    static const ScalingPlot batch = {"scaling_minibatch", "batch_size", "minibatch size (32 envs x 128 steps)", true};
    static const ScalingPlot threads = {"scaling_threads", "threads",
                                        "OpenMP threads (64 envs x 128 steps, batch 1024)", false};
    snprintf(png, sizeof png, "%s-scaling-envs.png", prefix);
    rc |= plot_write(plots, png, "SPS and memory against n_envs", scaling_body, list, &envs);
    snprintf(png, sizeof png, "%s-scaling-minibatch.png", prefix);
    rc |= plot_write(plots, png, "SPS and memory against minibatch size", scaling_body, list, &batch);
    snprintf(png, sizeof png, "%s-scaling-threads.png", prefix);
    rc |= plot_write(plots, png, "SPS against threads", scaling_body, list, &threads);
    snprintf(png, sizeof png, "%s-scaling-split.png", prefix);
    rc |= plot_write(plots, png, "rollout / GAE / update share of the time against n_envs", split_body, list, NULL);
  }
  if (memory) {
    snprintf(png, sizeof png, "%s-scaling-memory.png", prefix);
    rc |= plot_write(plots, png, "memory plan per slab against network size (fp16)", memory_body, list, "fp16");
  }
  return rc;
}

// --- JSON and Markdown ------------------------------------------------------------------------------------

// Writes "k=v,k=v" as a JSON object: numbers where the whole value parses as one, else strings.
static void json_params(JsonWriter *w, const char *params) {
  json_object_begin(w);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", params);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      json_kv_string(w, tok, "");
      continue;
    }
    *eq = '\0';
    char *end;
    double v = strtod(eq + 1, &end);
    if (end != eq + 1 && *end == '\0')
      json_kv_number(w, tok, v);
    else
      json_kv_string(w, tok, eq + 1);
  }
  json_object_end(w);
}

static void json_load(JsonWriter *w, const char *key, const double load[3]) {
  json_key(w, key);
  json_array_begin(w);
  for (int i = 0; i < 3; i++) json_number(w, load[i]);
  json_array_end(w);
}

int bench_all_write_json(const char *path, const Report *rep) {
  AtomicFile af;
  FILE *out = atomic_file_open(&af, path);
  if (!out) return -1;
  const Machine *m = rep->m;
  JsonWriter w;
  json_init(&w, out);
  json_object_begin(&w);
  json_key(&w, "machine");
  json_object_begin(&w);
  json_kv_string(&w, "cpu_model", m->cpu_model);
  json_kv_int(&w, "cores", m->cores);
  json_kv_string(&w, "cpu_flags", m->cpu_flags);
  json_kv_string(&w, "memory", m->memory);
  json_kv_string(&w, "kernel", m->kernel);
  json_kv_number(&w, "memory_bytes", atof(m->memory) * 1024.0);  // MemTotal is in kB
  json_kv_string(&w, "cpu_backend", m->backend_cpu);
  // How nn/backend_cpu_gemm.c chose its GEMM (oneDNN when built with it, unless PPO_CPU_GEMM=openblas).
  const char *fp32 = strstr(m->backend_cpu, "GEMM fp32 oneDNN") ? "oneDNN matmul" : "OpenBLAS sgemm";
  char fp16[96];
  snprintf(fp16, sizeof fp16, "%s on operands widened to fp32", fp32);
  json_kv_string(&w, "gemm_fp32", fp32);
  json_kv_string(&w, "gemm_bf16",
                 strstr(m->backend_cpu, "bf16 oneDNN") ? "oneDNN matmul (bf16 inputs)" : "OpenBLAS sgemm (widened)");
  json_kv_string(&w, "gemm_fp16", fp16);
  json_kv_string(&w, "blas", "OpenBLAS");
  json_kv_string(&w, "blas_core", m->blas_core);
  json_kv_string(&w, "blas_config", m->blas_config);
  json_kv_string(&w, "gemm_override", getenv("PPO_CPU_GEMM") ? getenv("PPO_CPU_GEMM") : "unset");
  json_kv_string(&w, "openblas_coretype", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
  json_kv_string(&w, "cuda_backend", m->cuda_backend);
  json_kv_string(&w, "gpu", m->gpu);
  json_key(&w, "backends");
  json_array_begin(&w);
  for (int b = 0; b < m->n_backends; b++) json_string(&w, m->backends[b]);
  json_array_end(&w);
  json_kv_string(&w, "build", PPO_BUILD_INFO);
  json_load(&w, "load_average_before", m->load_before);
  json_load(&w, "load_average_after", rep->load_after);
  json_object_end(&w);
  json_key(&w, "omp");
  json_object_begin(&w);
  json_kv_int(&w, "max_threads", m->omp_threads);
  json_kv_string(&w, "OMP_WAIT_POLICY", getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "unset");
  json_kv_string(&w, "GOMP_SPINCOUNT", getenv("GOMP_SPINCOUNT") ? getenv("GOMP_SPINCOUNT") : "unset");
  json_object_end(&w);
  json_kv_string(&w, "commit", m->commit);
  json_kv_string(&w, "date", m->date);
  json_kv_string(&w, "command", rep->command);
  json_kv_string(&w, "mode", rep->mode);
  json_kv_number(&w, "wall_seconds", rep->seconds);
  json_key(&w, "results");
  json_array_begin(&w);
  for (int i = 0; i < rep->list->count; i++) {
    const StoredResult *s = &rep->list->items[i];
    json_object_begin(&w);
    json_kv_string(&w, "group", s->group);
    json_kv_string(&w, "name", s->name);
    json_kv_string(&w, "backend", s->backend);
    json_kv_string(&w, "precision", s->precision);
    json_key(&w, "params");
    json_params(&w, s->params);
    json_kv_number(&w, "median", s->median);
    json_kv_number(&w, "min", s->min);
    json_kv_number(&w, "max", s->max);
    json_kv_string(&w, "unit", s->unit);
    json_kv_int(&w, "repeats", s->repeats);
    json_object_end(&w);
  }
  json_array_end(&w);
  json_key(&w, "plots");
  json_array_begin(&w);
  for (int i = 0; i < rep->plots->count; i++) {
    json_object_begin(&w);
    json_kv_string(&w, "png", bench_base_name(rep->plots->items[i].path));
    json_kv_string(&w, "title", rep->plots->items[i].title);
    json_object_end(&w);
  }
  json_array_end(&w);
  for (int i = 0; i < rep->n_sb3; i++) {  // sb3_compare: the first; sb3_compare_more: the others
    if (i == 0) json_key(&w, "sb3_compare");
    if (i == 1) {
      json_key(&w, "sb3_compare_more");
      json_array_begin(&w);
    }
    json_object_begin(&w);
    json_kv_string(&w, "command", rep->sb3_command[i]);
    json_kv_string(&w, "json", bench_base_name(rep->sb3_json[i]));
    json_kv_int(&w, "status", rep->sb3_status[i]);
    json_object_end(&w);
  }
  if (rep->n_sb3 > 1) json_array_end(&w);
  json_object_end(&w);
  json_finish(&w);
  return atomic_file_commit(&af);
}

static void md_number(FILE *out, double v) {
  double a = fabs(v);
  if (isnan(v))
    fprintf(out, "n/a");
  else if (a >= 1e5)
    fprintf(out, "%.0f", v);
  else if (a >= 100)
    fprintf(out, "%.1f", v);
  else
    fprintf(out, "%.3g", v);
}

int bench_all_write_markdown(const char *path, const Report *rep) {
  AtomicFile af;
  FILE *out = atomic_file_open(&af, path);
  if (!out) return -1;
  const Machine *m = rep->m;
  fprintf(out, "# ppo-bench all (%s), %s\n\n", rep->mode, m->date);
  fprintf(out, "- command: `%s` (working directory: the repository root)\n- commit: %s\n", rep->command, m->commit);
  fprintf(out, "- machine: %s, %d cores (%s), %s\n", m->cpu_model, m->cores, m->cpu_flags, m->memory);
  fprintf(out, "- CPU backend: %s\n- BLAS: OpenBLAS core %s (%s)\n", m->backend_cpu, m->blas_core, m->blas_config);
  fprintf(out, "- CUDA backend: %s; GPU: %s\n", m->cuda_backend, m->gpu);
  fprintf(out, "- build: %s\n- OpenMP: %d threads, OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s\n", PPO_BUILD_INFO,
          m->omp_threads, getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "unset",
          getenv("GOMP_SPINCOUNT") ? getenv("GOMP_SPINCOUNT") : "unset");
  fprintf(out, "- load average before %.2f %.2f %.2f, after %.2f %.2f %.2f; wall time %.0f s\n\n", m->load_before[0],
          m->load_before[1], m->load_before[2], rep->load_after[0], rep->load_after[1], rep->load_after[2],
          rep->seconds);
  const char *group = "";
  for (int i = 0; i < rep->list->count; i++) {
    const StoredResult *s = &rep->list->items[i];
    if (strcmp(s->group, group) != 0) {
      group = s->group;
      fprintf(out,
              "\n## %s\n\n| name | backend | precision | params | median | min | max | unit | repeats |\n"
              "|---|---|---|---|---:|---:|---:|---|---:|\n",
              group);
    }
    fprintf(out, "| %s | %s | %s | %s | ", s->name, s->backend, s->precision, s->params);
    md_number(out, s->median);
    fprintf(out, " | ");
    md_number(out, s->min);
    fprintf(out, " | ");
    md_number(out, s->max);
    fprintf(out, " | %s | %d |\n", s->unit, s->repeats);
  }
  if (rep->plots->count) {
    fprintf(out, "\n## plots\n\n");
    for (int i = 0; i < rep->plots->count; i++)
      fprintf(out, "- %s: ![%s](%s)\n", rep->plots->items[i].title, rep->plots->items[i].title,
              bench_base_name(rep->plots->items[i].path));
  }
  if (rep->n_sb3) fprintf(out, "\n## SB3 side by side\n\n");
  for (int i = 0; i < rep->n_sb3; i++)
    fprintf(out, "- `%s` exited %d; raw numbers in %s\n", rep->sb3_command[i], rep->sb3_status[i],
            bench_base_name(rep->sb3_json[i]));
  return atomic_file_commit(&af);
}
