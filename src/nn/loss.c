/* Softmax cross-entropy. The log-sum-exp is shifted by the row maximum and summed in double,
 * so large logits neither overflow nor lose the small probabilities. */
#include <math.h>

#include "nn_internal.h"

int syno_nn_softmax_xent(const syno_tensor_t *logits, const int32_t *labels, double *loss, syno_tensor_t *dlogits,
                         int64_t *ncorrect) {
  if (!logits || !logits->data || logits->ndim < 1 || !labels || !loss) return SYNO_NN_EINVAL;
  const int64_t k = logits->dims[logits->ndim - 1];
  const int64_t rows = k > 0 ? syno_nn_tensor_numel(logits) / k : 0;
  if (k <= 0 || rows <= 0) return SYNO_NN_ESHAPE;
  for (int64_t r = 0; r < rows; r++)
    if (labels[r] < 0 || labels[r] >= k) return SYNO_NN_ERANGE;
  if (dlogits) {
    int rc = syno_nn_tensor_resize_like(dlogits, logits);
    if (rc) return rc;
  }
  double total = 0.0;
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *z = logits->data + r * k;
    int64_t arg = 0;
    for (int64_t j = 1; j < k; j++)
      if (z[j] > z[arg]) arg = j;
    correct += arg == labels[r];
    double mx = z[arg], s = 0.0;
    for (int64_t j = 0; j < k; j++) s += exp((double)z[j] - mx);
    double lse = mx + log(s);
    total += lse - z[labels[r]];
    if (dlogits) {
      float *d = dlogits->data + r * k;
      for (int64_t j = 0; j < k; j++) {
        double p = exp((double)z[j] - lse);
        d[j] = (float)((p - (j == labels[r])) / (double)rows);
      }
    }
  }
  *loss = total / (double)rows;
  if (ncorrect) *ncorrect = correct;
  return SYNO_NN_OK;
}
