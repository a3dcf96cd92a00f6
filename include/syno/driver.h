/* syno/driver.h - the operator search end to end.
 *
 * The driver ties the pieces together: it builds the search space for the
 * backbone's slots (one binding per distinct slot shape), asks the search
 * (syno/search.h, MCTS or random) for candidates, evaluates each in its own
 * worker process (`syno eval`, see syno/pool.h) and records every result in
 * the results database (syno/store.h) before telling the search its reward.
 *
 * The first evaluation of a new database is the backbone with its standard
 * operator (the baseline row); the reward's accuracy bounds default to
 * [baseline - 0.3, baseline].
 *
 * Durability: a result is in the database before the driver acts on it, so
 * stopping the search at any moment (Ctrl-C, kill -9) loses at most the
 * evaluations still running. Resuming reads the search's settings from the
 * database, replays the search with the same seed, and every candidate the
 * search proposes that is already recorded gets its recorded reward without
 * being evaluated again. With one worker the replay is exact; with several,
 * the order of results may differ from the first run, so the resumed search
 * may go elsewhere - but it never evaluates a recorded candidate twice.
 *
 * The budget counts recorded candidates (successes and failures, the
 * baseline excluded), across runs. */
#ifndef SYNO_DRIVER_H
#define SYNO_DRIVER_H

#include <stdint.h>

#include "syno/error.h"

typedef struct {
  const char *db_path;
  int resume;              /* continue an existing database (settings from it) */
  /* What to train: passed to every `syno eval` worker. */
  const char *backbone, *dataset;
  int epochs, batch, depth;
  double width;            /* channel multiplier; 0 = the backbone's default */
  int pad;                 /* zero-padding of the images per side */
  long subset;
  double lr;
  uint64_t seed;
  /* The space. */
  int space_depth;         /* max primitives; 0 = the preset's */
  double max_flops_ratio, min_flops_ratio; /* vs the standard operator in the slots */
  double max_params_ratio; /* vs the standard operator in the first slot; 0 = no limit */
  int max_tensors;         /* input + weights; 0 = the preset's (2) */
  const char *max_count;   /* per-kind caps, "merge=1,split=3,shift=2"; NULL = none */
  /* The search. */
  int random;              /* random search instead of MCTS */
  int budget;              /* recorded candidates wanted; 0 = no limit */
  double time_limit;       /* seconds for this run; 0 = no limit */
  int workers;
  double cand_timeout;     /* seconds per evaluation; 0 = none */
  double reward_lb, reward_ub; /* < 0: from the baseline */
  const char *worker_exe;  /* the syno binary the workers run */
  const char *log_path;    /* one line per evaluation started, or NULL */
  int quiet;               /* no progress line */
} syno_driver_cfg_t;

void syno_driver_cfg_default(syno_driver_cfg_t *c);
/* Runs the search until the budget or the time is used up, the space is
 * exhausted, or SIGINT/SIGTERM arrives (then it stops starting new
 * evaluations, kills the running ones and returns 0 with the database
 * intact). Errors in the settings or the database are returned with err
 * set, before anything is written. */
int syno_driver_run(const syno_driver_cfg_t *c, syno_error_t *err);

#endif
