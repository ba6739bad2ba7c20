// bench/bench_all.h: what bench_all.c (the runs) shares with bench_all_report.c (the plots, the JSON
// and the Markdown of `ppo-bench all`): the stored results, the machine description and the report.
// Internal to ppo-bench. Strings are fixed-size copies, so results outlive the reporters' stacks.
#ifndef PPO_BENCH_BENCH_ALL_H
#define PPO_BENCH_BENCH_ALL_H

#include <stdbool.h>

#define TEXT_CAP 256
#define PATH_CAP_ALL 1024
#define PREFIX_CAP 512  // output paths: the prefix plus a suffix of at most 64 characters

typedef struct {
  char group[32], name[64], backend[16], precision[8], params[192], unit[24];
  double median, min, max;
  int repeats;
} StoredResult;

typedef struct {
  StoredResult *items;
  int count, capacity;
} ResultList;

typedef struct {
  char cpu_model[TEXT_CAP], cpu_flags[TEXT_CAP], memory[64], kernel[TEXT_CAP];
  int cores, omp_threads;
  char backend_cpu[512], blas_core[64], blas_config[TEXT_CAP];
  char gpu[TEXT_CAP], cuda_backend[TEXT_CAP];
  char backends[2][8];
  int n_backends;
  char commit[128], date[32], stamp[32];
  char binary[PATH_CAP_ALL];
  double load_before[3];
} Machine;

typedef struct {
  char path[PATH_CAP_ALL];  // the PNG
  char title[TEXT_CAP];
} Plot;

typedef struct {
  Plot items[8];
  int count;
} PlotList;

typedef struct {
  const Machine *m;
  const ResultList *list;
  const PlotList *plots;
  const char *command, *mode;
  // The SB3 side by side (bench/sb3_compare.py on CartPole): the engine at its config's thread
  // count, then at 2 threads against the same SB3 measurement; n_sb3 of them ran.
  const char *sb3_json[2], *sb3_command[2];
  int sb3_status[2], n_sb3;
  double load_after[3];
  double seconds;
} Report;

const StoredResult *result_find(const ResultList *list, const char *group, const char *name, const char *params);
const char *bench_base_name(const char *path);  // the part after the last '/'
// Writes <prefix>-scaling-{envs,minibatch,threads,split}.png (scaling) and <prefix>-scaling-memory.png
// (memory), each with its .gp script, and lists them in plots. Returns 0, or -1 when a plot failed
// (a warning names it; the others are still drawn). prefix is shorter than PREFIX_CAP.
int bench_all_plots(PlotList *plots, const ResultList *list, const char *prefix, bool scaling, bool memory);
int bench_all_write_json(const char *path, const Report *rep);      // atomically; 0, or -1 and the error message
int bench_all_write_markdown(const char *path, const Report *rep);  // atomically; 0, or -1 and the error message

#endif
