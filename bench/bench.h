// bench/bench.h: the subcommands of ppo-bench (bench/ppo_bench.c dispatches on argv[1]) and the
// result sink through which `ppo-bench all` collects what the other subcommands measure.
// Each subcommand takes the arguments after the program name (argv[0] is the subcommand) and returns
// the exit status: 0, 1 when a check or a run fails, 2 on bad usage.
#ifndef PPO_BENCH_BENCH_H
#define PPO_BENCH_BENCH_H

// One measurement: a warm-up, then `repeats` timed runs, summarised by median, min and max.
// Strings are borrowed for the duration of the bench_report call.
typedef struct {
  const char *group;      // "backend", "envs", "train", "scaling_envs", ...
  const char *name;       // "gemm_fwd_l1_B32", "env_trading_steps_per_s", ...
  const char *backend;    // "cpu", "cuda", or "-" when no compute backend is involved
  const char *precision;  // "fp32", "bf16", "fp16", or "-"
  const char *params;     // "key=value,key=value" (numbers or text without ',' and '=')
  double median, min, max;
  const char *unit;  // "GFLOP/s", "steps/s", "bytes", ...
  int repeats;
} BenchResult;

typedef void (*BenchSink)(const BenchResult *result, void *context);
void bench_set_sink(BenchSink sink, const char *group,
                    void *context);            // sink NULL: printing only; group fills NULL groups
void bench_report(const BenchResult *result);  // to the sink, when one is set

// Removes dir and everything under it (rm -rf, run without a shell: any name is safe); a warning on
// stderr when that fails. For the runs' temporary directories under $TMPDIR (bench_all.c).
void bench_remove_tree(const char *dir);

// Can an output file (--json) be made where it is named? Checked before the runs, so that a typo
// costs seconds, not the whole run: the path must not name a directory, and its temporary file (see
// atomic_file.h) is created and removed at once, the one test that also holds for root and for
// file systems such as /proc. Returns 0, or -1 and sets the error message (the reason).
// (bench_train.c)
int bench_output_path_check(const char *path);

int bench_backend_main(int argc, char **argv);  // ppo-bench backend: GEMM shapes and the update step (ppo_bench.c)
int bench_envs_main(int argc, char **argv);     // ppo-bench envs: CartPole and trading env steps/s (bench_envs.c)
int bench_train_main(int argc, char **argv);    // ppo-bench train: a whole run, SPS and its split (bench_train.c)
int bench_all_main(int argc, char **argv);  // ppo-bench all: every benchmark, scaling, JSON + Markdown (bench_all.c)

#endif
