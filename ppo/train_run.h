// ppo/train_run.h: a whole `ppo-train` run: configuration (or a checkpoint's), memory plan, run
// directory, the iteration loop with progress lines, metrics, checkpoints and signals
// (DESIGN.md section 9). apps/ppo_train.c parses the command line and calls train_run; ppo-bench
// and the tests call it too.
//
// Run directory (run_dir/name, or --run-dir): config.ini (the resolved configuration, every key
// with its origin), train.log (the plain progress lines), metrics.csv and metrics.h5
// (ppo/metrics_log.h), checkpoints/ckpt_NNNNNN.h5 (every [run] checkpoint_every iterations and at
// the end; the newest checkpoint_keep kept) and checkpoints/last.h5 (a link to the newest).
// A directory that already holds metrics.csv is refused unless the run resumes into it, and so is
// one where a file the run writes is a directory, a FIFO, ... (train_run_check_outputs).
//
// Signals: the first SIGINT, SIGTERM or SIGHUP asks the trainer to stop (ppo/trainer.h: the
// iteration in progress stops before its next rollout step or minibatch and its starting state is
// restored; an [eval] pass in progress is abandoned and recorded as pending); the run then writes a
// checkpoint and returns 0. A second signal ends the process at once (another stop signal within a
// second of the first is the same request: timeout(1) sends SIGTERM to the process and its group,
// systemd a SIGHUP right after its SIGTERM). A SIGHUP that was ignored at start (nohup) stays
// ignored; SIGPIPE is ignored (a closed pipe loses progress lines, not the run).
//
// Exit statuses (common/error.h): 0 done or stopped by a signal with a checkpoint, 2 bad input
// (configuration, data, checkpoint, plan over the memory limit), 1 a failure at run time.
// Depends on ppo/config.h, ppo/trainer.h, ppo/checkpoint.h, ppo/metrics_log.h.
#ifndef PPO_TRAIN_RUN_H
#define PPO_TRAIN_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "ppo/config.h"

typedef struct {
  const char *config_path;  // NULL when resuming with the checkpoint's own configuration
  int n_overrides;          // --set arguments
  const char *const *overrides;
  const char *resume;      // checkpoint to continue from, or NULL
  const char *run_dir;     // the run directory itself, or NULL for [run] run_dir / name
  bool plan_only;          // --plan: print the memory plan and exit
  int64_t max_iterations;  // > 0: stop after this many iterations of this invocation
  bool quiet;              // no configuration dump and no progress lines on stderr
  bool in_walk_forward;    // a fold of ppo-train --walk-forward: a stop names the walk-forward's way on
  bool scratch;            // the caller deletes the run directory after (ppo-bench): a stop names no way on
} TrainRunOptions;

typedef struct {
  int64_t iterations, timesteps;  // at the end
  double seconds;                 // wall time of the loop
  double rollout_s, gae_s, update_s;
  double ep_rew_mean;  // at the end (NaN before any episode ended)
  double peak_rss_bytes;
  char run_dir[1024];
  char last_checkpoint[1100];
  bool eval_pending;  // the last iteration's [eval] pass was abandoned by a stop: a resume runs it first
  bool stopped;       // a stop (a signal) ended the run before its last iteration
} TrainRunResult;

int train_run(const TrainRunOptions *options, TrainRunResult *result);  // an exit status

// The signal handling above for a span longer than one train_run (ppo-train --walk-forward: its
// start-up and the time between folds), in pairs that nest: inside the outermost pair a signal
// only sets the stop flag (trainer_stop_requested), which the caller polls, and each train_run
// inside keeps the handlers and the flag. The outermost end restores the dispositions the outermost
// begin found and clears the flag.
void train_signals_begin(void);
void train_signals_end(void);

// The checkpoint a resume of run_dir continues from: checkpoints/last.h5 where it exists (a symlink
// to the newest, or a hard link where the file system has no symlinks), else the checkpoint that
// checkpoints/last.txt names (written where neither link can be made), else the ckpt_NNNNNN.h5
// written last (modification time). false when there is none.
bool train_run_latest_checkpoint(const char *run_dir, char *path, size_t capacity);

// 0 when no other ppo-train holds run_dir's lock (RUN/.lock; also when there is none); else -1 and
// the message a run that tries to lock it gets ("run directory RUN is in use by another ppo-train
// (pid N), ..."). ppo-train --resume asks it where there is no checkpoint to resume from yet.
int train_run_check_not_in_use(const char *run_dir);

// Every file a run writes in run_dir (config.ini, train.log, metrics.csv and .h5, best.h5 and
// best.txt, checkpoints/last.h5 and last.txt, checkpoints/ckpt_NNNNNN.h5) is absent, a regular file
// or a symbolic link: 0; else -1 and the message naming the first that is a directory, a FIFO, ...
// (common/file_check.h). train_run checks its run directory so before the market loads; ppo-train
// --walk-forward checks every fold's before the first fold trains.
int train_run_check_outputs(const char *run_dir);

// The configuration a run of these options trains with: config_path with the overrides, or with
// resume the checkpoint's own (when there is no config_path) checked for compatibility with it.
// 0, or -1 and the message. (ppo-train --print-config.)
int train_run_resolve_config(const TrainRunOptions *options, Config *cfg);

#endif
