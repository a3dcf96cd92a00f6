/* syno train: train a backbone whose slots hold the standard operator or a synthesized one:
 * a CNN on images or a small GPT on characters. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/task.h"
#include "cli.h"
#include "syno/alloc.h"
#include "syno/file.h"
#include "syno/backbone.h"
#include "syno/driver.h"
#include "syno/grow.h"
#include "syno/store.h"

static const char *usage =
    "usage: syno train [OPTIONS]\n"
    "\n"
    "Trains a backbone network with SGD or AdamW (cosine schedule) and prints per-epoch\n"
    "progress and the final test accuracy (gpt: validation loss, perplexity and next-char\n"
    "accuracy), FLOPs, parameters and training throughput. resnet/vgg train on images:\n"
    "every 3x3 conv is a slot that runs the standard conv2d or, with --op/--op-file, a\n"
    "synthesized operator in the text form over the conv2d preset ([N, C_in, H, H] ->\n"
    "[N, C_out, H, H]; k_1=3, k_2=7, s=2, g=32). gpt is a small decoder-only transformer\n"
    "trained on characters: its fused QKV, output and two MLP projections are linear slots\n"
    "running the bias-free linear or a synthesized operator: one over the linear preset\n"
    "(the original's GPT-2 search, [N, seq_len, H_in] -> [N, seq_len, t*H_in]) fills the\n"
    "QKV projection only; one over linear-wide ([N, S, C_in] -> [N, S, C_out]) every slot.\n";

/* An operator file: a regular file of at most 1 MiB of text (no NUL byte), trailing blanks
 * dropped. NULL with err set. */
static char *read_op_file(const char *path, syno_error_t *err) {
  size_t n;
  char *buf = syno_read_regular(path, 1 << 20, &n, err);
  if (!buf) return NULL;
  if (strlen(buf) != n) {
    syno_error_set(err, "%s has a NUL byte at offset %zu: not operator text", path, strlen(buf));
    free(buf);
    return NULL;
  }
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = 0;
  return buf;
}

int cli_cmd_train(int argc, char **argv) {
  static const char *const optimizers[] = {"sgd", "adamw", NULL};
  const char *const *backbones = syno_task_backbone_names(-1);
  syno_train_cfg_t cfg = {0};
  cfg.backbone = "resnet";
  cfg.dataset = NULL; /* digits, or kjv for gpt */
  cfg.epochs = 1;
  cfg.seed = 1;
  int json = 0, list = 0;
  const char *db_path = NULL;
  long db_id = 0;
  const char *op_file = NULL, *spec_path = NULL;
  double momentum = 0, wd = 0;
  syno_opt_t opts[] = {
      SYNO_OPT_ENUM("backbone", "NAME", &cfg.backbone, backbones, "the network (default resnet)"),
      SYNO_OPT_STR("dataset", "NAME", &cfg.dataset,
                   "images: digits (default; committed in data/), fashion-mnist,\n"
                   "any image set `syno search --help` lists, e.g. images (your\n"
                   "own: IDX files in $SYNO_IMAGES_DIR or data/images; docs/train.md),\n"
                   "or a path to a digits CSV or a Fashion-MNIST IDX directory;\n"
                   "gpt: kjv (default; committed in data/) or a path to a text file"),
      SYNO_OPT_INT("epochs", "E", &cfg.epochs, 1, 10000, "epochs (default 1; gpt: one pass over the training windows)"),
      SYNO_OPT_STR("op", "TEXT", &cfg.op_text, "the operator every slot runs (default: the standard one)"),
      SYNO_OPT_PATH("op-file", "F", &op_file, SYNO_OPT_FILE, "read the operator text from file F"),
      SYNO_OPT_ENUM("preset", "NAME", &cfg.preset, cli_preset_names(),
                    "the preset the operator is written in (default conv2d;\n"
                    "linear for gpt: its QKV projection only; linear-wide: every slot)"),
      SYNO_OPT_PATH("spec", "FILE", &spec_path, SYNO_OPT_FILE,
                    "the operator's space as a spec file with a \"preset\" (the\n"
                    "operator is written in that preset's variables)"),
      SYNO_OPT_PATH("db", "DB", &db_path, SYNO_OPT_FILE,
                    "with --id N: retrain candidate N of a search's results database\n"
                    "(its operator, backbone, data set and padding; e.g. the winner, fully)"),
      SYNO_OPT_INT("id", "N", &db_id, 1, 1000000000000000LL, "the candidate of --db"),
      SYNO_OPT_INT("subset", "N", &cfg.subset, 0, 100000000,
                   "train on N stratified, seeded training images (gpt: the first\n"
                   "N training windows; default 0: all)"),
      SYNO_OPT_FLAG("augment", &cfg.augment, "random crops (padding 4) and horizontal flips of the\n"
                                             "training images"),
      SYNO_OPT_INT("pad", "P", &cfg.pad, 0, 64,
                   "zero-pad the images by P pixels per side (e.g. 2: Fashion-MNIST\n"
                   "at 32x32, so that every ResNet stage has an even side)"),
      SYNO_OPT_UINT("seed", "S", &cfg.seed, UINT64_MAX, "random seed (default 1)"),
      SYNO_OPT_INT("batch", "B", &cfg.batch, 1, 65536, "batch size (default 128; gpt: 32 sequences)"),
      SYNO_OPT_ENUM("optimizer", "NAME", &cfg.optimizer, optimizers,
                    "sgd (default) or adamw (default for gpt; betas 0.9, 0.99)"),
      SYNO_OPT_REAL("lr", "X", &cfg.lr, 0, 100, SYNO_OPT_OPEN_MIN, "base learning rate (default 0.1; adamw: 3e-3)"),
      SYNO_OPT_REAL("momentum", "X", &momentum, 0, 0.9999, 0, "SGD momentum (default 0.9)"),
      SYNO_OPT_REAL("wd", "X", &wd, 0, 1, 0, "weight decay (default 5e-4; adamw: 0.1, decoupled)"),
      SYNO_OPT_INT("warmup", "E", &cfg.warmup_epochs, 0, 1000, "warm-up epochs (default 0)"),
      SYNO_OPT_REAL("width", "W", &cfg.width, 0.01, 4096, 0,
                    "channel multiplier (default 1: widths 16/32/64/128; at most 16);\n"
                    "gpt: the model dim (default 64)"),
      SYNO_OPT_INT("depth", "D", &cfg.depth, 1, 8,
                   "blocks per stage (default 2; gpt: transformer blocks; vgg: convs;\n"
                   "resnet34, resnext29, densenet121, efficientnetv2s: at most D,\n"
                   "default as published)"),
      SYNO_OPT_INT("heads", "H", &cfg.heads, 1, 256, "gpt: attention heads (default 4)"),
      SYNO_OPT_INT("context", "T", &cfg.context, 1, 4096, "gpt: context length in characters (default 64)"),
      SYNO_OPT_REAL("time-limit", "S", &cfg.time_limit, 0, 1e9, 0, "stop after S seconds (default 0: none)"),
      SYNO_OPT_FLAG("list-slots", &list, "print the slots and their bindings, then exit"),
      SYNO_OPT_FLAG("quiet", &cfg.quiet, "no progress output"),
      SYNO_OPT_FLAG("json", &json, "print the result as one JSON object line"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("train", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  if (syno_opt_given(opts, "momentum")) cfg.momentum = momentum > 0 ? momentum : -1;
  if (syno_opt_given(opts, "wd")) cfg.weight_decay = wd > 0 ? wd : -1;
  syno_error_t err = {0};
  if (syno_opt_conflict(opts, "op", "op-file", &err) || syno_opt_conflict(opts, "spec", "preset", &err) ||
      syno_opt_conflict(opts, "spec", "db", &err))
    return cli_cmd_error("train", "%s", err.msg);
  if (spec_path) {
    char *json;
    if ((rc = cli_spec_for_slots(spec_path, &json, &cfg.preset))) return rc;
    syno_free(json);
  }
  if (!db_path != !db_id) return cli_cmd_error(NULL, "--db and --id go together (a candidate of a search's database)");
  char db_strs[3][256], *db_op = NULL;
  if (db_path) {
    static const char *const own[] = {"op", "op-file", "preset", "backbone", "dataset", "pad", NULL};
    for (int i = 0; own[i]; i++)
      if (syno_opt_given(opts, own[i]))
        return cli_cmd_error(NULL, 
            "--db takes the operator, preset, backbone, data set and padding from the "
            "search; drop --%s (and --op/--op-file/--preset/--backbone/--dataset/--pad)",
            own[i]);
    rc = cli_candidate_from_db(db_path, db_id, cfg.quiet ? NULL : "retraining", &cfg, db_strs, &db_op);
    if (rc) return rc;
    cfg.op_text = db_op;
  }
  if (syno_backbone_known(cfg.backbone, &err)) return cli_cmd_error(NULL, "%s", err.msg);
  const syno_task_backbone_t *task = syno_task_backbone(cfg.backbone);
  const int gpt = task->kind == SYNO_TASK_TEXT;
  if (!gpt && (cfg.heads || cfg.context)) return cli_cmd_error(NULL, "--heads and --context are gpt options");
  if (gpt && cfg.augment) return cli_cmd_error(NULL, "--augment transforms images; gpt trains on text");
  if (!gpt && cfg.width > 16)
    return cli_cmd_error(NULL, "bad value '%g' for --width (expected a number in [0.01, 16])", cfg.width);
  if (!cfg.dataset) cfg.dataset = task->dataset;
  char *file_text = db_op;
  if (op_file) {
    file_text = read_op_file(op_file, &err);
    if (!file_text) return cli_cmd_error(NULL, "operator file: %s", err.msg);
    cfg.op_text = file_text;
  }
  if (list) {
    /* the slots and bindings of the network a run would train (the data set sets the shapes) */
    syno_backbone_t bb;
    rc = syno_train_build(&cfg, &bb, &err);
    free(file_text);
    if (rc) return cli_cmd_error(NULL, "%s", err.msg);
    char buf[8192];
    syno_backbone_list_slots(&bb, buf, sizeof buf);
    fputs(buf, stdout);
    printf("network: %lld FLOPs per %s, %lld parameters\n", (long long)bb.flops, gpt ? "sequence" : "image",
           (long long)bb.params);
    syno_backbone_free(&bb);
    return 0;
  }
  syno_train_result_t res;
  rc = syno_train_run(&cfg, &res, &err);
  free(file_text);
  if (rc) {
    fprintf(stderr, "syno train: %s\n", err.msg);
    return rc == -2 ? SYNO_EXIT_FAIL : SYNO_EXIT_USAGE;
  }
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backbone", cfg.backbone);
    cJSON_AddStringToObject(o, "dataset", cfg.dataset);
    cJSON_AddNumberToObject(o, "epochs", res.epochs_done);
    cJSON_AddNumberToObject(o, "test_acc", res.final_test_acc);
    cJSON_AddNumberToObject(o, "max_test_acc", res.max_test_acc);
    cJSON_AddNumberToObject(o, "train_loss", res.final_train_loss);
    cJSON_AddNumberToObject(o, "flops", (double)res.flops);
    cJSON_AddNumberToObject(o, "params", (double)res.params);
    cJSON_AddNumberToObject(o, "test_loss", res.final_test_loss);
    cJSON_AddNumberToObject(o, "train_images_per_s", res.train_images_per_s);
    if (gpt) {
      cJSON_AddNumberToObject(o, "val_loss", res.final_test_loss);
      cJSON_AddNumberToObject(o, "perplexity", exp(res.final_test_loss));
      cJSON_AddNumberToObject(o, "initial_val_loss", res.initial_test_loss);
      cJSON_AddNumberToObject(o, "train_tokens_per_s", res.train_tokens_per_s);
      cJSON_AddNumberToObject(o, "steps", (double)res.steps);
    }
    cJSON_AddNumberToObject(o, "wall_seconds", res.wall_seconds);
    if (res.failed)
      cJSON_AddStringToObject(o, "failure", res.failure);
    else
      cJSON_AddNullToObject(o, "failure");
    char *s = cJSON_PrintUnformatted(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    if (res.failed) printf("stopped early: %s\n", res.failure);
    if (gpt) {
      printf(
          "validation loss %.4f nats/char (perplexity %.2f; %.4f before training), "
          "next-char accuracy %.2f%% after %d epochs (%lld steps), train loss %.4f\n",
          res.final_test_loss, exp(res.final_test_loss), res.initial_test_loss, 100 * res.final_test_acc,
          res.epochs_done, (long long)res.steps, res.final_train_loss);
      printf("FLOPs %lld per sequence, params %lld, training %.0f tokens/s, wall %.1f s\n", (long long)res.flops,
             (long long)res.params, res.train_tokens_per_s, res.wall_seconds);
      return res.failed ? SYNO_EXIT_FAIL : 0;
    }
    printf("test accuracy %.2f%% (max %.2f%%) after %d epochs, train loss %.4f\n", 100 * res.final_test_acc,
           100 * res.max_test_acc, res.epochs_done, res.final_train_loss);
    printf("FLOPs %lld per image, params %lld, training %.0f images/s, wall %.1f s\n", (long long)res.flops,
           (long long)res.params, res.train_images_per_s, res.wall_seconds);
  }
  return res.failed ? SYNO_EXIT_FAIL : 0;
}
