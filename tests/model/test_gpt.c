/* The gpt backbone's parts and the whole: causal attention against its definition and by
 * finite differences, the token + position embedding, the attention sublayer with standard
 * and synthesized slots, a whole tiny gpt, the committed text and its split, and short
 * training runs on it whose validation loss must fall. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "syno/backbone.h"
#include "syno/data.h"
#include "synotest.h"

static const char *GROUPED =
    "r0=sum(s^-1*C_in); in[i0, i1, split(div(i2, s^-1*C_out), share(r0, 1))] "
    "expand[share(mod(i2, s^-1*C_out), 1)] w1[mod(i2, s^-1*C_out), r0]";
/* The same two groups in the linear preset (the original's GPT-2 signature, output t*H_in). */
static const char *GROUPED_QKV =
    "r0=sum(k_1^-1*H_in); in[i0, i1, split(div(i2, k_1^-1*t*H_in), share(r0, 1))] "
    "expand[share(mod(i2, k_1^-1*t*H_in), 1)] w1[mod(i2, k_1^-1*t*H_in), r0]";

/* softmax(q k^T / sqrt(D), causal) v in double, straight from the definition. */
static void attention_ref(const float *x, int64_t B, int64_t T, int64_t C, int64_t H, double *y) {
  int64_t D = C / H;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < T; i++) {
        double s[64], mx = -1e300, z = 0;
        for (int64_t j = 0; j <= i; j++) {
          double dot = 0;
          for (int64_t d = 0; d < D; d++)
            dot += (double)x[(b * T + i) * 3 * C + h * D + d] * x[(b * T + j) * 3 * C + C + h * D + d];
          s[j] = dot / sqrt((double)D);
          mx = fmax(mx, s[j]);
        }
        for (int64_t j = 0; j <= i; j++) z += s[j] = exp(s[j] - mx);
        for (int64_t d = 0; d < D; d++) {
          double acc = 0;
          for (int64_t j = 0; j <= i; j++) acc += s[j] / z * x[(b * T + j) * 3 * C + 2 * C + h * D + d];
          y[(b * T + i) * C + h * D + d] = acc;
        }
      }
}

static void test_attention_forward(void **state) {
  (void)state;
  const int64_t B = 2, T = 7, C = 12, H = 3;
  int64_t d[3] = {B, T, 3 * C};
  syno_tensor_t x = gc_randn(3, d, 1);
  syno_layer_t *a = syno_nn_causal_attention_create(H);
  assert_non_null(a);
  assert_int_equal(syno_nn_forward(a, &x, 1), 0);
  assert_int_equal(a->out.ndim, 3);
  assert_int_equal(a->out.dims[2], C);
  double *y = malloc(sizeof(double) * (size_t)(B * T * C));
  attention_ref(x.data, B, T, C, H, y);
  for (int64_t i = 0; i < B * T * C; i++) assert_true(fabs(a->out.data[i] - y[i]) < 1e-5);
  /* rows of P sum to 1 and nothing is attended above the diagonal */
  const syno_tensor_t *p = syno_nn_causal_attention_probs(a);
  assert_non_null(p);
  for (int64_t r = 0; r < B * H * T; r++) {
    int64_t i = r % T;
    double s = 0;
    for (int64_t j = 0; j < T; j++) {
      s += p->data[r * T + j];
      if (j > i) assert_true(p->data[r * T + j] == 0.0f);
    }
    assert_true(fabs(s - 1) < 1e-5);
  }
  /* causality: changing the last position's q, k, v changes no earlier output */
  syno_tensor_t keep = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_copy(&keep, &a->out);
  for (int64_t c = 0; c < 3 * C; c++) x.data[(T - 1) * 3 * C + c] += 1.0f;
  assert_int_equal(syno_nn_forward(a, &x, 1), 0);
  for (int64_t i = 0; i < (T - 1) * C; i++) assert_true(a->out.data[i] == keep.data[i]);
  /* shapes: 3C must split into heads */
  int64_t bd[3] = {1, 2, 10};
  syno_tensor_t bad = gc_randn(3, bd, 2);
  assert_int_equal(syno_nn_forward(a, &bad, 1), SYNO_NN_ESHAPE);
  assert_null(syno_nn_causal_attention_create(0));
  assert_null(syno_nn_causal_attention_probs(NULL));
  free(y);
  syno_nn_tensor_free(&bad);
  syno_nn_tensor_free(&keep);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
}

static void test_attention_gradcheck(void **state) {
  (void)state;
  syno_layer_t *a = syno_nn_causal_attention_create(2);
  int64_t d[3] = {2, 5, 3 * 8};
  syno_tensor_t x = gc_randn(3, d, 3);
  assert_int_equal(gc_layer(a, &x, &GC_DEFAULT, 5), 0);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
}

static void test_token_pos_embedding(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_layer_t *e = syno_nn_token_pos_embedding_create(5, 4, 3, &rng);
  assert_non_null(e);
  int64_t d[2] = {2, 4};
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_nn_tensor_alloc(&x, 2, d), 0);
  const float ids[8] = {0, 4, 2, 2, 1, 3, 0, 4};
  memcpy(x.data, ids, sizeof ids);
  assert_int_equal(syno_nn_forward(e, &x, 1), 0);
  const float *wte = e->params[0].value.data, *wpe = e->params[1].value.data;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 3; j++) assert_true(e->out.data[i * 3 + j] == wte[(int)ids[i] * 3 + j] + wpe[(i % 4) * 3 + j]);
  gc_opts_t o = GC_DEFAULT;
  o.check_input = 0;
  assert_int_equal(gc_layer(e, &x, &o, 2), 0);
  x.data[3] = 5; /* out of the vocabulary */
  assert_int_equal(syno_nn_forward(e, &x, 1), SYNO_NN_ERANGE);
  int64_t ld[2] = {1, 5}; /* longer than the context */
  syno_tensor_t y = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_alloc(&y, 2, ld);
  assert_int_equal(syno_nn_forward(e, &y, 1), SYNO_NN_ESHAPE);
  syno_nn_tensor_free(&y);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(e);
}

static void check_attention_sublayer(const syno_slotop_t *op) {
  syno_rng_t rng;
  syno_rng_seed(&rng, 4, 1);
  syno_error_t err = {0};
  syno_layer_t *a = NULL, *slots[2];
  if (syno_gpt_attention_create(op, 8, 2, 4, &rng, &a, slots, &err)) fail_msg("%s", err.msg);
  for (int i = 0; i < 2; i++) {
    syno_slot_info_t si;
    assert_true(syno_slot_info(slots[i], &si));
    assert_int_equal(si.kind, SYNO_SLOT_LINEAR);
    assert_int_equal(si.s, 4);
    assert_int_equal(si.c_out, i ? 8 : 24); /* the fused QKV projection, then O */
  }
  int64_t d[3] = {2, 4, 8};
  syno_tensor_t x = gc_randn(3, d, 6);
  assert_int_equal(gc_layer(a, &x, &GC_DEFAULT, 7), 0);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
}

static void test_attention_sublayer_gradcheck(void **state) {
  (void)state;
  check_attention_sublayer(NULL);
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse_preset("linear-wide", GROUPED, &op, &err)) fail_msg("%s", err.msg);
  check_attention_sublayer(op);
  syno_slotop_free(op);
  /* the original's GPT-2 signature: the operator fills the QKV projection only */
  if (syno_slotop_parse_preset("linear", GROUPED_QKV, &op, &err)) fail_msg("%s", err.msg);
  check_attention_sublayer(op);
  syno_slotop_free(op);
  /* heads must divide the dim */
  syno_rng_t rng;
  syno_rng_seed(&rng, 4, 1);
  syno_layer_t *a = NULL;
  assert_int_not_equal(syno_gpt_attention_create(NULL, 8, 3, 4, &rng, &a, NULL, &err), 0);
  assert_null(a);
}

/* A whole tiny gpt (dim 8, 2 heads, context 4, 1 block, vocabulary 5): every parameter by
 * finite differences, the slot list, and the checks of the configuration. */
static void test_gpt_backbone(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 5, 1);
  syno_error_t err = {0};
  syno_backbone_cfg_t bc = {.name = "gpt", .width = 8, .depth = 1, .vocab = 5, .context = 4, .heads = 2};
  syno_backbone_t bb;
  if (syno_backbone_build(&bc, &rng, &bb, &err)) fail_msg("%s", err.msg);
  assert_int_equal(bb.nslots, 4);
  char buf[2048];
  syno_backbone_list_slots(&bb, buf, sizeof buf);
  assert_non_null(strstr(buf, "slot 0: linear S=4 C_in=8 C_out=24"));
  assert_non_null(strstr(buf, "slot 1: linear S=4 C_in=8 C_out=8"));
  assert_non_null(strstr(buf, "slot 2: linear S=4 C_in=8 C_out=32"));
  assert_non_null(strstr(buf, "slot 3: linear S=4 C_in=32 C_out=8"));
  /* embeddings 5*8 + 4*8, per block 2 LN (2*16) + 4*64 + 2*256, final LN 16, head 40 */
  assert_int_equal(bb.params, 40 + 32 + 32 + 256 + 512 + 16 + 40);
  /* slots 2 * (4*64 + 2*256) * 4, attention 4 * 4 * 4 * 8, head 2 * 4 * 8 * 5 */
  assert_int_equal(bb.flops, 2 * (4 * 64 + 2 * 256) * 4 + 4 * 4 * 4 * 8 + 2 * 4 * 8 * 5);
  int64_t d[2] = {2, 4};
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_nn_tensor_alloc(&x, 2, d), 0);
  for (int i = 0; i < 8; i++) x.data[i] = (float)((i * 3) % 5);
  assert_int_equal(syno_nn_forward(bb.net, &x, 0), 0);
  assert_int_equal(bb.net->out.ndim, 3);
  assert_int_equal(bb.net->out.dims[2], 5);
  /* the embeddings start at std 0.02, where +-eps = 1e-2 is no small step for the first
   * LayerNorm: check at std 0.5 instead */
  syno_layer_t *emb = bb.net->children[0];
  for (int p = 0; p < 2; p++)
    for (int64_t i = 0; i < syno_nn_tensor_numel(&emb->params[p].value); i++) emb->params[p].value.data[i] *= 25.0f;
  gc_opts_t o = GC_DEFAULT;
  o.check_input = 0;
  o.max_elems = 60;
  assert_int_equal(gc_layer(bb.net, &x, &o, 8), 0);
  syno_nn_tensor_free(&x);
  syno_backbone_free(&bb);

  /* configuration errors */
  bc.heads = 3;
  assert_int_not_equal(syno_backbone_build(&bc, &rng, &bb, &err), 0);
  assert_non_null(strstr(err.msg, "heads"));
  bc.heads = 2;
  bc.width = 8.5;
  assert_int_not_equal(syno_backbone_build(&bc, &rng, &bb, &err), 0);
  bc.width = 8;
  bc.vocab = 0;
  assert_int_not_equal(syno_backbone_build(&bc, &rng, &bb, &err), 0);
  bc.vocab = 5;
  syno_slotop_t *conv = NULL;
  assert_int_equal(syno_slotop_parse_preset("conv2d-wide", syno_builtin_find("conv2d")->text, &conv, &err), 0);
  bc.op = conv;
  assert_int_not_equal(syno_backbone_build(&bc, &rng, &bb, &err), 0);
  assert_non_null(strstr(err.msg, "linear preset"));
  /* and a linear operator does not fill a CNN */
  syno_slotop_t *lin = NULL;
  assert_int_equal(syno_slotop_parse_preset("linear-wide", GROUPED, &lin, &err), 0);
  syno_backbone_cfg_t cc = {.name = "vgg", .in_c = 1, .in_h = 8, .in_w = 8, .nclasses = 10, .op = lin};
  assert_int_not_equal(syno_backbone_build(&cc, &rng, &bb, &err), 0);
  assert_non_null(strstr(err.msg, "conv preset"));
  syno_slotop_free(conv);
  syno_slotop_free(lin);
}

static void kjv_path(char *path, size_t n) {
  const char *src = getenv("SYNO_SOURCE_DIR");
  snprintf(path, n, "%s/data/" SYNO_KJV_FILE, src ? src : ".");
}

static void test_text(void **state) {
  (void)state;
  char path[1024];
  kjv_path(path, sizeof path);
  syno_text_t tr, va;
  syno_error_t err = {0};
  if (syno_text_load(path, &tr, &va, &err)) fail_msg("%s", err.msg);
  assert_int_equal(tr.n + va.n, 366283);
  assert_int_equal(tr.vocab, 62);
  assert_int_equal(va.vocab, 62);
  assert_true(tr.n >= 366283 * 9 / 10 && tr.n < 366283 * 9 / 10 + 400);
  assert_int_equal(tr.chars[tr.ids[tr.n - 1]], '\n'); /* the split is at a line start */
  const char *start = "In the beginning God created";
  for (size_t i = 0; i < strlen(start); i++) assert_int_equal(tr.chars[tr.ids[i]], start[i]);
  assert_int_equal(syno_text_windows(&tr, 64), (tr.n - 1) / 64);
  int64_t idx[2] = {0, 3};
  int32_t lab[128];
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_text_gather(&tr, 64, idx, 2, &x, lab), 0);
  assert_int_equal(x.dims[0], 2);
  assert_int_equal(x.dims[1], 64);
  for (int j = 0; j < 63; j++) assert_int_equal(lab[j], (int32_t)x.data[j + 1]); /* targets are the inputs shifted */
  assert_int_equal(x.data[64], tr.ids[3 * 64]);
  idx[1] = syno_text_windows(&tr, 64);
  assert_int_equal(syno_text_gather(&tr, 64, idx, 2, &x, lab), SYNO_NN_ERANGE);
  syno_nn_tensor_free(&x);
  syno_text_free(&tr);
  syno_text_free(&va);
  assert_int_not_equal(syno_text_load("/nonexistent/text.txt", &tr, &va, &err), 0);
  assert_non_null(strstr(err.msg, "/nonexistent/text.txt"));
}

/* Short runs on the committed text: the standard gpt with AdamW, then a synthesized (grouped)
 * linear in every slot; both must lower the validation loss well below its start. */
static void test_train_gpt(void **state) {
  (void)state;
  syno_train_cfg_t cfg = {0};
  cfg.backbone = "gpt";
  cfg.dataset = "kjv";
  cfg.epochs = 2;
  cfg.batch = 16;
  cfg.subset = 256;
  cfg.width = 32;
  cfg.depth = 1;
  cfg.context = 32;
  cfg.quiet = 1;
  cfg.seed = 1;
  syno_train_result_t res;
  syno_error_t err = {0};
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  fprintf(stderr, "  gpt standard: val loss %.3f -> %.3f, acc %.3f, %.0f tok/s, %lld steps\n", res.initial_test_loss,
          res.final_test_loss, res.final_test_acc, res.train_tokens_per_s, (long long)res.steps);
  assert_false(res.failed);
  assert_int_equal(res.steps, 2 * 256 / 16);
  assert_true(res.initial_test_loss > 3.8);
  assert_true(res.final_test_loss < res.initial_test_loss - 0.9);
  assert_true(res.final_test_acc > 0.15);
  assert_true(res.train_tokens_per_s > 0 && res.params > 0 && res.flops > 0);

  cfg.op_text = GROUPED;
  cfg.preset = "linear-wide";
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  fprintf(stderr, "  gpt grouped:  val loss %.3f -> %.3f, acc %.3f, %.0f tok/s\n", res.initial_test_loss,
          res.final_test_loss, res.final_test_acc, res.train_tokens_per_s);
  assert_false(res.failed);
  assert_true(res.final_test_loss < res.initial_test_loss - 0.9);
  /* the GPT-2 preset (the default for gpt): the grouped QKV projection only */
  cfg.op_text = GROUPED_QKV;
  cfg.preset = NULL;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  fprintf(stderr, "  gpt grouped QKV: val loss %.3f -> %.3f, acc %.3f, %.0f tok/s\n", res.initial_test_loss,
          res.final_test_loss, res.final_test_acc, res.train_tokens_per_s);
  assert_false(res.failed);
  assert_true(res.final_test_loss < res.initial_test_loss - 0.9);

  /* a conv2d operator is not a gpt operator; SGD is an option too */
  cfg.op_text = syno_builtin_find("conv2d")->text;
  assert_int_not_equal(syno_train_run(&cfg, &res, &err), 0);
  assert_non_null(strstr(err.msg, "linear"));
  cfg.op_text = NULL;
  cfg.optimizer = "sgd";
  cfg.lr = 0.5;
  cfg.epochs = 1;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_true(res.final_test_loss < res.initial_test_loss);
  cfg.optimizer = "lion";
  assert_int_not_equal(syno_train_run(&cfg, &res, &err), 0);
  assert_non_null(strstr(err.msg, "lion"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_forward),   cmocka_unit_test(test_attention_gradcheck),
      cmocka_unit_test(test_token_pos_embedding), cmocka_unit_test(test_attention_sublayer_gradcheck),
      cmocka_unit_test(test_gpt_backbone),        cmocka_unit_test(test_text),
      cmocka_unit_test(test_train_gpt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
