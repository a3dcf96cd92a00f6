/* syno/dist.h - the search's evaluations on MPI ranks (MPICH).
 *
 * `mpiexec -n K syno search --mpi ...`: rank 0 runs the search loop
 * (syno/driver.h) and owns the results database; ranks 1..K-1 are workers.
 * Rank 0 drives them through a remote worker pool (syno/pool.h), one slot
 * per worker rank, so the search loop is the one local searches run: a free
 * worker gets the next candidate at once, whatever the others are doing.
 *
 * A worker rank runs each evaluation as a local search does, as a `syno
 * eval` child process in a pool of one, with the timeout the master sent;
 * it sends back how the child ended and what it printed. A child that
 * crashes, hangs or prints garbage costs its candidate only. Before running
 * a child, the worker replaces the request's --threads by its share of its
 * node's CPUs (the CPUs over the worker ranks on that node).
 *
 * Messages (MPI_COMM_WORLD, JSON text): a job, master -> worker, {"tag",
 * "slot", "timeout", "argv"}; a result, worker -> master, {"tag", "slot",
 * "end", "exit_code", "term_signal", "started", "finished", "out",
 * "err_tail"}; stop, master -> worker, empty. Both sides poll (MPI_Iprobe,
 * then a few milliseconds' sleep) instead of blocking in MPI, whose waits
 * spin a CPU that the evaluations need.
 *
 * Faults: MPICH ends the whole job when a rank dies, so a lost rank ends the
 * search; `syno search --resume` on the same database continues it (every
 * result is recorded before the search acts on it). Workers ignore SIGINT
 * and SIGTERM: the master, on either, stops the workers itself.
 *
 * Built without MPI (no libmpich-dev at configure time), every function
 * fails with a message saying how to get it. */
#ifndef SYNO_DIST_H
#define SYNO_DIST_H

#include "syno/error.h"
#include "syno/pool.h"

/* 1 when this build has MPI. */
int syno_dist_available(void);

/* MPI_Init, then the ranks' layout (collective: every rank calls it). */
int syno_dist_init(int *argc, char ***argv, int *rank, int *size, syno_error_t *err);

/* Rank 0: a pool with one slot per worker rank (fails with fewer than 2
 * ranks). The pool's free (syno_pool_free) stops the workers. */
int syno_dist_pool_new(double timeout_s, syno_pool_t **out, syno_error_t *err);

/* Ranks > 0: run the master's jobs until it says stop. */
int syno_dist_serve(syno_error_t *err);

/* MPI_Finalize, when syno_dist_init succeeded. */
void syno_dist_finalize(void);

#endif
