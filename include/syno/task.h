/* syno/task.h - what a task is: the one table of the backbones syno trains and the data sets
 * they train on.
 *
 * Each backbone has its kind (an image classifier, or a language model that predicts the
 * next character), the preset its slots take, its default data set and training settings,
 * the measure a candidate is rewarded and judged by (accuracy, or perplexity) and the
 * tolerance within which a candidate keeps the baseline's quality (the paper's: 1 point of
 * accuracy, or 1 of perplexity). Each data set has its kind and, for images, the stored
 * image's channels, side and classes (0: the user's own set, whose files say). Every
 * command, the evaluation protocol, the search driver and the model read their names and
 * properties here; nothing else lists them or compares a backbone's name
 * (tests/cli/test_task_names.sh checks it). */
#ifndef SYNO_TASK_H
#define SYNO_TASK_H

#include <stddef.h>

#include "syno/error.h"

typedef enum { SYNO_TASK_IMAGES = 0, SYNO_TASK_TEXT = 1 } syno_task_kind_t;

typedef struct {
  const char *name;
  syno_task_kind_t kind; /* images: an image classifier; text: a language model */
  const char *preset;    /* the preset its slots take by default */
  const char *dataset;   /* its default data set */
  const char *measure;   /* "accuracy" or "perplexity" */
  double tolerance;      /* within this of the baseline's measure a candidate keeps its quality */
  double lr;             /* default learning rate of the proxy training */
  long batch;            /* default batch of the proxy training */
} syno_task_backbone_t;

/* The data sets' identities, for the loaders. */
typedef enum {
  SYNO_TASK_DIGITS = 0,
  SYNO_TASK_FASHION_MNIST = 1,
  SYNO_TASK_KJV = 2,
  SYNO_TASK_CIFAR10 = 3,
  SYNO_TASK_CIFAR100 = 4,        /* the 100 fine labels */
  SYNO_TASK_CIFAR100_COARSE = 5, /* the 20 superclasses */
  SYNO_TASK_IMAGES_IDX = 6,      /* the user's own images in IDX files (syno_data_load_images) */
} syno_task_data_id_t;

typedef struct {
  const char *name;
  syno_task_data_id_t id;
  syno_task_kind_t kind;
  int channels, side, classes; /* images: as stored (before padding), 0 if read from the files
                                * (syno_train_image_shape); text: 0 */
  const char *dir_env, *dir;   /* where its files are: $dir_env, else data/<dir> (NULL: built in) */
} syno_task_dataset_t;

/* The backbone or data set of that name, or NULL. */
const syno_task_backbone_t *syno_task_backbone(const char *name);
const syno_task_dataset_t *syno_task_dataset(const char *name);
/* The backbone's entry, or NULL with err naming the known ones. */
const syno_task_backbone_t *syno_task_backbone_find(const char *name, syno_error_t *err);
/* Whether the backbone of that name is a language model (rewarded by perplexity). */
int syno_task_is_lm(const char *backbone);
/* NULL-terminated lists of the names (kind < 0: all), for option choices. */
const char *const *syno_task_backbone_names(int kind);
const char *const *syno_task_dataset_names(int kind);
/* The names of a NULL-terminated list joined for a message: ", " between them and `last`
 * (", " or " or ") before the final one, into buf (cut to n). */
void syno_task_join(const char *const *names, const char *last, char *buf, size_t n);
/* Whether measure `value` of a candidate is within the backbone's tolerance of the
 * baseline's `base` (accuracy: at least base - tolerance; perplexity: at most base + it). */
int syno_task_within(const syno_task_backbone_t *t, double value, double base);

#endif
