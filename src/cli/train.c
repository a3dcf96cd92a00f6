/* syno train: train a backbone whose slots hold the standard operator or a synthesized one:
 * a CNN on images or a small GPT on characters. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/backbone.h"
#include "syno/driver.h"
#include "syno/grow.h"
#include "syno/store.h"

static const char *help =
    "usage: syno train [OPTIONS]\n"
    "\n"
    "Trains a backbone network with SGD or AdamW (cosine schedule) and prints per-epoch\n"
    "progress and the final test accuracy (gpt: validation loss, perplexity and next-char\n"
    "accuracy), FLOPs, parameters and training throughput. resnet/vgg train on images:\n"
    "every 3x3 conv is a slot that runs the standard conv2d or, with --op/--op-file, a\n"
    "synthesized operator in the text form over the conv2d preset ([N, C_in, H, W] ->\n"
    "[N, C_out, H, W]; k=3, s=2). gpt is a small decoder-only transformer trained on\n"
    "characters: its Q, K, V, output and two MLP projections are linear slots running the\n"
    "bias-free linear or an operator over the linear preset ([N, S, C_in] -> [N, S, C_out];\n"
    "k=4, s=2), one operator for every slot.\n"
    "\n"
    "options:\n"
    "  --backbone NAME     resnet (default), vgg or gpt\n"
    "  --dataset NAME      images: digits (default; committed in data/), fashion-mnist,\n"
    "                      or a path to a digits CSV or a Fashion-MNIST IDX directory;\n"
    "                      gpt: kjv (default; committed in data/) or a path to a text file\n"
    "  --epochs E          epochs (default 1; gpt: one pass over the training windows)\n"
    "  --op TEXT           the operator every slot runs (default: the standard one)\n"
    "  --op-file F         read the operator text from file F\n"
    "  --preset NAME       the preset the operator is written in: conv2d (default),\n"
    "                      conv2d-wide, linear (the default for gpt: the original's GPT-2\n"
    "                      search, its QKV projection only) or linear-wide (every slot)\n"
    "  --db DB --id N      retrain candidate N of a search's results database (its operator,\n"
    "                      backbone, data set and padding; e.g. the winner, fully)\n"
    "  --subset N          train on N stratified, seeded training images (gpt: the first\n"
    "                      N training windows)\n"
    "  --pad P             zero-pad the images by P pixels per side (e.g. 2: Fashion-MNIST\n"
    "                      at 32x32, so that every ResNet stage has an even side)\n"
    "  --seed S            random seed (default 1)\n"
    "  --batch B           batch size (default 128; gpt: 32 sequences)\n"
    "  --optimizer NAME    sgd (default) or adamw (default for gpt; betas 0.9, 0.99)\n"
    "  --lr X              base learning rate (default 0.1; adamw: 3e-3)\n"
    "  --momentum X        SGD momentum (default 0.9)\n"
    "  --wd X              weight decay (default 5e-4; adamw: 0.1, decoupled)\n"
    "  --warmup E          warm-up epochs (default 0)\n"
    "  --width W           channel multiplier (default 1: widths 16/32/64/128);\n"
    "                      gpt: the model dim (default 64)\n"
    "  --depth D           blocks per stage (default 2; gpt: transformer blocks)\n"
    "  --heads H           gpt: attention heads (default 4)\n"
    "  --context T         gpt: context length in characters (default 64)\n"
    "  --time-limit S      stop after S seconds (default none)\n"
    "  --list-slots        print the slots and their bindings, then exit\n"
    "  --quiet             no progress output\n"
    "  --json              print the result as one JSON object line\n"
    "  -h, --help          this help\n";

static int parse_num(const char *name, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return cli_usage_error("bad value '%s' for --%s (expected a number in [%g, %g])", s, name, lo, hi);
  *out = v;
  return 0;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 == cap && syno_grow((void **)&buf, &cap, cap + 1, 1)) {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  if (buf) {
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = 0;
  }
  return buf;
}

/* The candidate `id` of a search's database: its operator (*op, malloc'd; NULL for the
 * baseline) and the search's backbone, data set, padding and backbone knobs into cfg (strings
 * kept in strs). Exit status on error, with the message printed. */
static int from_db(const char *path, long id, syno_train_cfg_t *cfg, char strs[3][256], char **op) {
  syno_error_t err = {0};
  syno_db_t *db = NULL;
  syno_db_cand_t *rows = NULL;
  char *settings = NULL;
  int n = 0, rc = SYNO_EXIT_USAGE;
  *op = NULL;
  if (syno_db_open(path, 0, &db, &err) || syno_db_meta_get(db, "driver", &settings, &err) < 0 ||
      syno_db_list(db, &rows, &n, &err)) {
    fprintf(stderr, "syno: %s\n", err.msg);
    goto out;
  }
  const syno_db_cand_t *c = NULL;
  for (int i = 0; i < n; i++)
    if (rows[i].id == id) c = &rows[i];
  cJSON *o = settings ? cJSON_Parse(settings) : NULL;
  const cJSON *bb = cJSON_GetObjectItemCaseSensitive(o, "backbone"),
              *ds = cJSON_GetObjectItemCaseSensitive(o, "dataset");
  if (!c)
    fprintf(stderr, "syno: %s has no candidate %ld (ids 1..%d; see syno report)\n", path, id, n);
  else if (!cJSON_IsString(bb) || !cJSON_IsString(ds))
    fprintf(stderr, "syno: %s has no search settings (meta 'driver'); not a syno search database?\n", path);
  else {
    snprintf(strs[0], 256, "%s", bb->valuestring);
    snprintf(strs[1], 256, "%s", ds->valuestring);
    cfg->backbone = strs[0];
    cfg->dataset = strs[1];
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "preset");
    snprintf(strs[2], 256, "%s", cJSON_IsString(ps) ? ps->valuestring : SYNO_DRIVER_LEGACY_PRESET);
    cfg->preset = strs[2];
    const cJSON *x;
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "pad"))) cfg->pad = (int)x->valuedouble;
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "width")) && x->valuedouble > 0)
      cfg->width = x->valuedouble;
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "depth")) && x->valuedouble > 0)
      cfg->depth = (int)x->valuedouble;
    if (!c->is_baseline && c->op_text) *op = strdup(c->op_text);
    if (!c->is_baseline && !*op)
      fprintf(stderr, "syno: candidate %ld of %s has no operator text\n", id, path);
    else {
      rc = 0;
      if (!cfg->quiet)
        fprintf(stderr, "retraining candidate %ld of %s (%s) on %s, backbone %s, pad %d\n", id, path,
                c->is_baseline ? "the standard operator" : "a synthesized operator", cfg->dataset, cfg->backbone,
                cfg->pad);
    }
  }
  cJSON_Delete(o);
out:
  free(settings);
  syno_db_list_free(rows, n);
  syno_db_close(db);
  return rc;
}

int cli_cmd_train(int argc, char **argv) {
  enum {
    O_BACKBONE = 256,
    O_DATASET,
    O_EPOCHS,
    O_OP,
    O_OPFILE,
    O_SUBSET,
    O_SEED,
    O_BATCH,
    O_LR,
    O_MOM,
    O_WD,
    O_WARM,
    O_WIDTH,
    O_DEPTH,
    O_TIME,
    O_LIST,
    O_QUIET,
    O_JSON,
    O_OPT,
    O_HEADS,
    O_CONTEXT,
    O_PAD,
    O_DB,
    O_ID,
    O_PRESET
  };
  static const struct option longopts[] = {{"backbone", required_argument, 0, O_BACKBONE},
                                           {"dataset", required_argument, 0, O_DATASET},
                                           {"epochs", required_argument, 0, O_EPOCHS},
                                           {"op", required_argument, 0, O_OP},
                                           {"op-file", required_argument, 0, O_OPFILE},
                                           {"subset", required_argument, 0, O_SUBSET},
                                           {"seed", required_argument, 0, O_SEED},
                                           {"batch", required_argument, 0, O_BATCH},
                                           {"lr", required_argument, 0, O_LR},
                                           {"momentum", required_argument, 0, O_MOM},
                                           {"wd", required_argument, 0, O_WD},
                                           {"warmup", required_argument, 0, O_WARM},
                                           {"width", required_argument, 0, O_WIDTH},
                                           {"depth", required_argument, 0, O_DEPTH},
                                           {"time-limit", required_argument, 0, O_TIME},
                                           {"list-slots", no_argument, 0, O_LIST},
                                           {"quiet", no_argument, 0, O_QUIET},
                                           {"json", no_argument, 0, O_JSON},
                                           {"optimizer", required_argument, 0, O_OPT},
                                           {"heads", required_argument, 0, O_HEADS},
                                           {"context", required_argument, 0, O_CONTEXT},
                                           {"help", no_argument, 0, 'h'},
                                           {"pad", required_argument, 0, O_PAD},
                                           {"db", required_argument, 0, O_DB},
                                           {"id", required_argument, 0, O_ID},
                                           {"preset", required_argument, 0, O_PRESET},
                                           {0, 0, 0, 0}};
  syno_train_cfg_t cfg = {0};
  cfg.backbone = "resnet";
  cfg.dataset = NULL; /* digits, or kjv for gpt */
  cfg.epochs = 1;
  cfg.seed = 1;
  int json = 0, list = 0, explicit_net = 0;
  const char *db_path = NULL;
  long db_id = 0;
  const char *op_file = NULL;
  double v = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
      case 'h': fputs(help, stdout); return 0;
      case O_BACKBONE:
        cfg.backbone = optarg;
        explicit_net = 1;
        break;
      case O_DATASET:
        cfg.dataset = optarg;
        explicit_net = 1;
        break;
      case O_EPOCHS:
        if (parse_num("epochs", optarg, 1, 10000, &v)) return 2;
        cfg.epochs = (int)v;
        break;
      case O_OP: cfg.op_text = optarg; break;
      case O_OPFILE: op_file = optarg; break;
      case O_DB: db_path = optarg; break;
      case O_PRESET: cfg.preset = optarg; break;
      case O_ID:
        if (parse_num("id", optarg, 1, 1e15, &v)) return 2;
        db_id = (long)v;
        break;
      case O_PAD:
        if (parse_num("pad", optarg, 0, 64, &v)) return 2;
        cfg.pad = (int)v;
        explicit_net = 1;
        break;
      case O_SUBSET:
        if (parse_num("subset", optarg, 1, 1e9, &v)) return 2;
        cfg.subset = (int64_t)v;
        break;
      case O_SEED:
        if (parse_num("seed", optarg, 0, 1e18, &v)) return 2;
        cfg.seed = (uint64_t)v;
        break;
      case O_BATCH:
        if (parse_num("batch", optarg, 1, 65536, &v)) return 2;
        cfg.batch = (int64_t)v;
        break;
      case O_LR:
        if (parse_num("lr", optarg, 1e-9, 100, &v)) return 2;
        cfg.lr = v;
        break;
      case O_MOM:
        if (parse_num("momentum", optarg, 0, 0.9999, &v)) return 2;
        cfg.momentum = v > 0 ? v : -1;
        break;
      case O_WD:
        if (parse_num("wd", optarg, 0, 1, &v)) return 2;
        cfg.weight_decay = v > 0 ? v : -1;
        break;
      case O_WARM:
        if (parse_num("warmup", optarg, 0, 1000, &v)) return 2;
        cfg.warmup_epochs = (int)v;
        break;
      case O_WIDTH:
        if (parse_num("width", optarg, 0.01, 4096, &v)) return 2;
        cfg.width = v;
        break;
      case O_HEADS:
        if (parse_num("heads", optarg, 1, 256, &v)) return 2;
        cfg.heads = (int)v;
        break;
      case O_CONTEXT:
        if (parse_num("context", optarg, 1, 4096, &v)) return 2;
        cfg.context = (int64_t)v;
        break;
      case O_OPT: cfg.optimizer = optarg; break;
      case O_DEPTH:
        if (parse_num("depth", optarg, 1, 8, &v)) return 2;
        cfg.depth = (int)v;
        break;
      case O_TIME:
        if (parse_num("time-limit", optarg, 0, 1e9, &v)) return 2;
        cfg.time_limit = v;
        break;
      case O_LIST: list = 1; break;
      case O_QUIET: cfg.quiet = 1; break;
      case O_JSON: json = 1; break;
      default: return cli_usage_error("unknown or incomplete option '%s' (try 'syno train --help')", argv[optind - 1]);
    }
  }
  if (optind < argc) return cli_usage_error("unexpected argument '%s' (try 'syno train --help')", argv[optind]);
  if (!db_path != !db_id) return cli_usage_error("--db and --id go together (a candidate of a search's database)");
  char db_strs[3][256], *db_op = NULL;
  if (db_path) {
    if (explicit_net || op_file || cfg.op_text || cfg.preset)
      return cli_usage_error(
          "--db takes the operator, preset, backbone, data set and padding from the "
          "search; drop --op/--op-file/--preset/--backbone/--dataset/--pad");
    int rc = from_db(db_path, db_id, &cfg, db_strs, &db_op);
    if (rc) return rc;
    cfg.op_text = db_op;
  }
  const int gpt = !strcmp(cfg.backbone, "gpt");
  if (strcmp(cfg.backbone, "resnet") && strcmp(cfg.backbone, "vgg") && !gpt)
    return cli_usage_error("unknown backbone '%s' (known: resnet, vgg, gpt)", cfg.backbone);
  if (cfg.optimizer && strcmp(cfg.optimizer, "sgd") && strcmp(cfg.optimizer, "adamw"))
    return cli_usage_error("unknown optimizer '%s' (known: sgd, adamw)", cfg.optimizer);
  if (!gpt && (cfg.heads || cfg.context)) return cli_usage_error("--heads and --context are gpt options");
  if (!gpt && cfg.width > 16)
    return cli_usage_error("bad value '%g' for --width (expected a number in [0.01, 16])", cfg.width);
  if (!cfg.dataset) cfg.dataset = gpt ? "kjv" : "digits";
  if (op_file && cfg.op_text) return cli_usage_error("--op and --op-file exclude each other");
  char *file_text = db_op;
  if (op_file) {
    file_text = read_file(op_file);
    if (!file_text) return cli_usage_error("cannot read operator file '%s'", op_file);
    cfg.op_text = file_text;
  }
  syno_error_t err = {0};
  if (list) {
    /* the slots and bindings of the network a run would train (the data set sets the shapes) */
    syno_backbone_t bb;
    int rc = syno_train_build(&cfg, &bb, &err);
    free(file_text);
    if (rc) return cli_usage_error("%s", err.msg);
    char buf[8192];
    syno_backbone_list_slots(&bb, buf, sizeof buf);
    fputs(buf, stdout);
    printf("network: %lld FLOPs per %s, %lld parameters\n", (long long)bb.flops, gpt ? "sequence" : "image",
           (long long)bb.params);
    syno_backbone_free(&bb);
    return 0;
  }
  syno_train_result_t res;
  int rc = syno_train_run(&cfg, &res, &err);
  free(file_text);
  if (rc) {
    fprintf(stderr, "syno train: %s\n", err.msg);
    return SYNO_EXIT_USAGE;
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
