/* syno/driver.h - the operator search end to end.
 *
 * The driver ties the pieces together: it builds the search space for the
 * backbone's slots (one binding per distinct slot shape), asks the search
 * (syno/search.h, MCTS or random) for candidates, evaluates each in its own
 * worker process (`syno eval`, see syno/pool.h; what the two exchange is
 * syno/evalproto.h) and records every result in the results database
 * (syno/store.h) before telling the search its reward. It prints nothing and
 * installs no signal handler: it reports through the cfg's progress
 * callback and stops when the cfg's stop flag is set (`syno search` prints
 * the progress line and sets the flag on SIGINT and SIGTERM).
 *
 * The first evaluation of a new database is the backbone with its standard
 * operator (the baseline row); the reward's accuracy bounds default to
 * [baseline - 0.3, baseline]. A language model (backbone gpt, operators of
 * the linear presets in its linear slots) is rewarded by validation
 * perplexity instead, lower being better: 1 at the baseline's, 0 at 1.3
 * times it, with the same power. The baseline is always trained; a candidate
 * less than min_speedup times faster than the standard network is not (the
 * worker times it first): it is recorded as a failure with reward 0.
 *
 * Confirmation: when the search phase ends (budget, time or space used up,
 * not the stop flag), the top `confirm` successful candidates by reward
 * (ties: the earlier) that have no confirmation yet are re-trained at a
 * larger proxy - twice the epochs, twice the training subset (all stays
 * all), seed + 1 - each by a `syno eval --confirm` worker in the same pool,
 * with the per-evaluation timeout scaled by the work (x4, x2 without a
 * subset). The accuracy goes into the candidate's confirmation columns
 * (syno_db_confirm); a failed confirmation is recorded as one and not tried
 * again. A resumed search confirms too, so new entries of the top get theirs.
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
 * baseline excluded), across runs.
 *
 * Order: results go to the search (and into the database) as they arrive,
 * so with several workers two runs with one seed may differ. With `ordered`
 * they go in the order the candidates were proposed, and the k-th proposal
 * is made after exactly the first k - workers + 1 results: the run is then
 * the same, candidate for candidate, whatever the workers' speeds and
 * transport (local processes or MPI ranks), at the cost of a worker idling
 * while an older evaluation is still running.
 *
 * Transport: the driver runs the evaluations in a local pool of `workers`
 * processes, or in cfg.pool when given (syno/pool.h: e.g. the MPI ranks of
 * syno/dist.h); the search loop is the same. */
#ifndef SYNO_DRIVER_H
#define SYNO_DRIVER_H

#include <signal.h>
#include <stdint.h>

#include "syno/error.h"
#include "syno/pool.h"
#include "syno/space.h"

/* Proposals in a row that may come back empty (each after a few seconds of
 * rollouts) before the search stops. */
#define SYNO_DRIVER_FRUITLESS 20

/* The preset of a search recorded before searches stored theirs: the space
 * that was then called conv2d. */
#define SYNO_DRIVER_LEGACY_PRESET "conv2d-wide"

typedef struct syno_driver_progress syno_driver_progress_t;

typedef struct syno_driver_cfg {
  const char *db_path;
  int resume; /* continue an existing database (settings from it) */
  /* What to train: passed to every `syno eval` worker (syno/evalproto.h). */
  const char *backbone, *dataset;
  const char *preset; /* the operators' preset (syno/signature.h): conv2d (default) or conv2d-wide;
                       * linear or linear-wide for gpt */
  int epochs, batch, depth;
  double width; /* channel multiplier; 0 = the backbone's default */
  int pad;      /* zero-padding of the images per side */
  int augment;  /* random crops and flips of the training images (syno_data_augment) */
  long subset;
  double lr;
  uint64_t seed;
  /* The space. */
  int space_depth;                         /* max primitives; 0 = the preset's */
  double max_flops_ratio, min_flops_ratio; /* vs the standard operator in the slots (each slot's own,
                                            * grouped or depthwise, from the plan; the spec gets
                                            * absolute limits); < 0: the preset's */
  double max_params_ratio;                 /* vs the standard operator in the first slot; 0 = no limit */
  int max_tensors;                         /* input + weights; 0 = the preset's (2) */
  const char *max_count;                   /* per-kind caps, "merge=1,split=3,shift=2"; NULL = none */
  const char *spec;                        /* a spec file's JSON (syno space's format) with a "preset" and
                                            * no "bind", whose options shape the space; the slots' bindings
                                            * and the FLOPs limits are added as without it (its
                                            * max/min_flops_ratio, when given, are the ratios; its
                                            * max/min_flops, absolute, are kept); the result is recorded
                                            * as the search's spec. NULL: the preset alone */
  /* The search. */
  int random;        /* random search instead of MCTS */
  int budget;        /* recorded candidates wanted; 0 = no limit */
  double time_limit; /* seconds for this run; 0 = no limit */
  int workers;
  double cand_timeout;         /* seconds per evaluation; 0 = none */
  double reward_lb, reward_ub; /* < 0: from the baseline */
  double min_speedup;          /* candidates slower than this times the standard network are not
                                * trained; 0 = no check (default 1; on resume the recorded one, 0
                                * for a search recorded before it existed) */
  int confirm;                 /* top candidates to confirm at the end; 0 = none; < 0: unset, 3 for
                                * a new search, the recorded one on resume */
  int ordered;                 /* results to the search in proposal order (reproducible) */
  int stand_in;                /* workers run `syno eval --stand-in` (no training; tests) */
  const char *kernels;         /* the workers' --kernels (exec, halide, best); NULL: exec. On
                                * resume, the recorded one */
  const char *evaluator;       /* the workers' --evaluator: a command that trains each candidate
                                * instead of syno's runtime (docs/evaluator.md); NULL: none. On
                                * resume, the recorded one */
  syno_pool_t *pool;           /* where evaluations run; NULL: a local pool of `workers`. The
                                * driver owns it (frees it, also on error) and sets workers
                                * to its size */
  const char *worker_exe;      /* the syno binary the workers run */
  const char *log_path;        /* one line per evaluation started, or NULL */
  /* Reporting and stopping; the driver itself prints nothing. */
  int quiet;                                                     /* no progress events but DONE */
  void (*progress)(const syno_driver_progress_t *p, void *user); /* NULL: none */
  void *user;                                                    /* passed to progress */
  /* Polled between steps (e.g. set by a signal handler): when non-zero the
   * driver starts nothing more, drops the running evaluations and returns 0.
   * NULL: run to the end. */
  volatile sig_atomic_t *stop;
} syno_driver_cfg_t;

typedef enum {
  SYNO_DRIVER_BASELINE_START, /* the baseline is not recorded yet: it trains now */
  SYNO_DRIVER_BASELINE_DONE,  /* base_acc, reward_lb and reward_ub are known */
  SYNO_DRIVER_PROGRESS,       /* once per step of the main loop (about every second) */
  SYNO_DRIVER_INTERRUPTED,    /* the stop flag was seen; `running` evaluations are dropped */
  SYNO_DRIVER_CONFIRM_START,  /* confirm_total candidates are re-trained at confirm_epochs,
                               * confirm_subset, confirm_seed */
  SYNO_DRIVER_CONFIRMED,      /* one confirmation is recorded: confirm_id, confirm_acc, ... */
  SYNO_DRIVER_DONE,           /* the run is over: see stopped and exhausted */
} syno_driver_event_t;

struct syno_driver_progress {
  syno_driver_event_t event;
  const syno_driver_cfg_t *cfg;                   /* the settings in force (on resume, the recorded ones) */
  int count;                                      /* candidates recorded, across runs (the baseline excluded) */
  int running;                                    /* evaluations in flight */
  int evaluated, failed, replayed;                /* this run: evaluated (failures included), failed,
                                                   * proposals answered from the database */
  int slower;                                     /* this run: failed because slower than min_speedup (not trained) */
  double best_reward, best_acc, best_acc_speedup; /* best reward (-1: none yet), and that candidate's */
  double base_acc;                                /* the baseline network's accuracy */
  double best_speedup;                            /* the fastest candidate within 1 pp of base_acc (a language
                                                   * model: within 1 point of base_ppl), 0 if none */
  double base_ppl, best_ppl;                      /* a language model's: the baseline's perplexity, the best
                                                   * reward's (0 for images) */
  double reward_lb, reward_ub;
  double elapsed; /* seconds since the baseline phase began */
  int stopped;    /* DONE: the stop flag ended the run */
  int exhausted;  /* DONE: 1 the space has nothing left, 2 SYNO_DRIVER_FRUITLESS
                   * proposals in a row found nothing new */
  const syno_space_t *space; /* DONE: the searched space (its spec and what it pruned) */
  /* The confirmation phase. */
  int confirm_total, confirm_done, confirm_failed; /* to confirm in this run, recorded, of
                                                    * which failed */
  int confirm_epochs;                              /* the larger proxy */
  long confirm_subset;                             /* 0 = all */
  uint64_t confirm_seed;
  long confirm_id;                       /* CONFIRMED: the candidate's id */
  double confirm_proxy_acc, confirm_acc; /* CONFIRMED: its search accuracy, the confirmed one */
  const char *confirm_reason;            /* CONFIRMED: why it failed, or NULL */
};

void syno_driver_cfg_default(syno_driver_cfg_t *c);
/* Runs the search until the budget or the time is used up, the space is
 * exhausted, or *c->stop becomes non-zero (then it stops starting new
 * evaluations, kills the running ones and returns 0 with the database
 * intact). Errors in the settings or the database are returned with err
 * set, before anything is written. */
int syno_driver_run(const syno_driver_cfg_t *c, syno_error_t *err);

#endif
