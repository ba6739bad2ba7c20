// bench/bench.h: the subcommands of ppo-bench (bench/ppo_bench.c dispatches on argv[1]).
// Each takes the arguments after the program name (argv[0] is the subcommand) and returns the exit
// status: 0, 1 when a check or a run fails, 2 on bad usage.
#ifndef PPO_BENCH_BENCH_H
#define PPO_BENCH_BENCH_H

int bench_envs_main(int argc, char **argv);   // ppo-bench envs: CartPole and trading env steps/s (bench_envs.c)
int bench_train_main(int argc, char **argv);  // ppo-bench train: a whole run, SPS and its split (bench_train.c)

#endif
