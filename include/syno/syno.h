/* syno/syno.h - the one header an embedder includes.
 *
 * syno synthesizes neural-network operators from dimension-level primitives.
 * The library is built in layers that only call down (docs/architecture.md):
 *
 *   base     errors, bounded strings, the tokenizer, the random generator,
 *            hashing and the id table, array growth
 *   core     symbolic sizes (size.h), the operator graph and its text form
 *            (graph.h), operator signatures (signature.h), lowering to loop
 *            nests and the reference interpreter (lower.h, normal.h), the
 *            search space (space.h, flopsgame.h), code generation (codegen.h)
 *   exec     the fast executor of a lowered operator (exec.h)
 *   nn       the generic training engine: tensors, layers, optimizers, data
 *            sets (nn.h, train.h, data.h)
 *   model    operator slots, backbones and the training driver (backbone.h)
 *   search   MCTS and random search (search.h), worker processes (pool.h),
 *            the evaluation protocol (evalproto.h), the search driver (driver.h), the
 *            results database (store.h)
 *   dist     the search's evaluations on MPI ranks (dist.h; a stub without MPI)
 *
 * Link with the libraries of the layers used (syno_base, syno_core,
 * syno_exec, syno_nn, syno_model, syno_search, syno_dist), or all of them. Every
 * function that can fail on user input returns 0 or -1 and fills a
 * syno_error_t (error.h) with a message naming what is wrong. */
#ifndef SYNO_SYNO_H
#define SYNO_SYNO_H

#include "syno/alloc.h"
#include "syno/clock.h"
#include "syno/cpus.h"
#include "syno/error.h"
#include "syno/file.h"
#include "syno/grow.h"
#include "syno/hash.h"
#include "syno/lex.h"
#include "syno/opt.h"
#include "syno/proc.h"
#include "syno/rng.h"
#include "syno/strbuf.h"

#include "syno/codegen.h"
#include "syno/flopsgame.h"
#include "syno/graph.h"
#include "syno/lower.h"
#include "syno/normal.h"
#include "syno/signature.h"
#include "syno/size.h"
#include "syno/space.h"
#include "syno/task.h"

#include "syno/dnnl.h"
#include "syno/exec.h"
#include "syno/kernels.h"

#include "syno/data.h"
#include "syno/nn.h"
#include "syno/train.h"

#include "syno/backbone.h"

#include "syno/driver.h"
#include "syno/evalproto.h"
#include "syno/pool.h"
#include "syno/search.h"
#include "syno/store.h"

#include "syno/dist.h"

#endif /* SYNO_SYNO_H */
