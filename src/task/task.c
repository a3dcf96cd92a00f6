/* The table of tasks (syno/task.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "syno/task.h"

/* resnet is resnet18's older name; gpt is the small transformer on the KJV text. */
static const syno_task_backbone_t backbones[] = {
    {"resnet18", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"resnet", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"resnet34", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"resnext29", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"densenet121", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"efficientnetv2s", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"vgg", SYNO_TASK_IMAGES, "conv2d", "digits", "accuracy", 0.01, 0.1, 64},
    {"gpt", SYNO_TASK_TEXT, "linear", "kjv", "perplexity", 1.0, 3e-3, 32},
};
#define NB ((int)(sizeof backbones / sizeof backbones[0]))

/* CIFAR cannot be downloaded here: a user puts the binary versions where dir says (the
 * directories their archives unpack to), or points the variable at them. images is any
 * labelled image set in IDX files (docs/train.md): its shape and classes are the files'. */
static const syno_task_dataset_t datasets[] = {
    {"digits", SYNO_TASK_DIGITS, SYNO_TASK_IMAGES, 1, 8, 10, NULL, NULL},
    {"fashion-mnist", SYNO_TASK_FASHION_MNIST, SYNO_TASK_IMAGES, 1, 28, 10, NULL, NULL},
    {"kjv", SYNO_TASK_KJV, SYNO_TASK_TEXT, 0, 0, 0, NULL, NULL},
    {"cifar10", SYNO_TASK_CIFAR10, SYNO_TASK_IMAGES, 3, 32, 10, "SYNO_CIFAR10_DIR", "cifar-10-batches-bin"},
    {"cifar100", SYNO_TASK_CIFAR100, SYNO_TASK_IMAGES, 3, 32, 100, "SYNO_CIFAR100_DIR", "cifar-100-binary"},
    {"cifar100-coarse", SYNO_TASK_CIFAR100_COARSE, SYNO_TASK_IMAGES, 3, 32, 20, "SYNO_CIFAR100_DIR",
     "cifar-100-binary"},
    {"images", SYNO_TASK_IMAGES_IDX, SYNO_TASK_IMAGES, 0, 0, 0, "SYNO_IMAGES_DIR", "images"},
};
#define ND ((int)(sizeof datasets / sizeof datasets[0]))

const syno_task_backbone_t *syno_task_backbone(const char *name) {
  for (int i = 0; name && i < NB; i++)
    if (!strcmp(name, backbones[i].name)) return &backbones[i];
  return NULL;
}

const syno_task_dataset_t *syno_task_dataset(const char *name) {
  for (int i = 0; name && i < ND; i++)
    if (!strcmp(name, datasets[i].name)) return &datasets[i];
  return NULL;
}

const syno_task_backbone_t *syno_task_backbone_find(const char *name, syno_error_t *err) {
  const syno_task_backbone_t *t = syno_task_backbone(name);
  if (t) return t;
  char known[256];
  syno_task_join(syno_task_backbone_names(-1), ", ", known, sizeof known);
  syno_error_set(err, "unknown backbone '%s' (known: %s)", name ? name : "(null)", known);
  return NULL;
}

int syno_task_is_lm(const char *backbone) {
  const syno_task_backbone_t *t = syno_task_backbone(backbone);
  return t && t->kind == SYNO_TASK_TEXT;
}

/* The name lists: all, images, text; NULL-terminated, filled once. */
static const char *bnames[3][NB + 1], *dnames[3][ND + 1];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void fill_names(void) {
  for (int k = 0; k < 3; k++) {
    for (int i = 0, n = 0; i < NB; i++)
      if (k == 0 || (int)backbones[i].kind == k - 1) bnames[k][n++] = backbones[i].name;
    for (int i = 0, n = 0; i < ND; i++)
      if (k == 0 || (int)datasets[i].kind == k - 1) dnames[k][n++] = datasets[i].name;
  }
}

const char *const *syno_task_backbone_names(int kind) {
  pthread_once(&names_once, fill_names);
  return bnames[kind < 0 ? 0 : 1 + kind];
}

const char *const *syno_task_dataset_names(int kind) {
  pthread_once(&names_once, fill_names);
  return dnames[kind < 0 ? 0 : 1 + kind];
}

void syno_task_join(const char *const *names, const char *last, char *buf, size_t n) {
  int count = 0;
  while (names[count]) count++;
  if (n) buf[0] = 0;
  for (int i = 0; i < count; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", i == 0 ? "" : i == count - 1 ? last : ", ", names[i]);
  }
}

int syno_task_within(const syno_task_backbone_t *t, double value, double base) {
  return t->kind == SYNO_TASK_TEXT ? value <= base + t->tolerance : value >= base - t->tolerance;
}
