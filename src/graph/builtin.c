/* Standard operators expressed in the primitives (docs/semantics.md §10), in the
 * search's canonical form: the output channels come from an expanded Share
 * with the weight (an "outer" dim), every weight axis is a Share, and
 * windows are Unfolds whose window side is contracted with the weight.
 *
 * Variable names are fixed: N, C_in, C_out, H, W (primary) and k, s, g
 * (coefficients: kernel, stride, groups), each with a default value so
 * a builtin runs without --bind. */
#include <string.h>

#include "syno/graph.h"

static const syno_builtin_t builtins[] = {
    {"conv2d", "k x k convolution, stride 1, same zero padding", "N=8, C_in=16, C_out=16, H=28, W=28; k=3",
     "[N, C_in: unordered, H, W]", "[N, C_out: unordered, H, W]",
     "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, share(r2, 1))] "
     "expand[share(i1, 1)] w1[i1, r0, r1, r2]"},
    {"grouped-conv2d", "k x k convolution in g groups (weight [g, C_out/g, C_in/g, k, k])",
     "N=8, C_in=16, C_out=16, H=28, W=28; k=3, g=2", "[N, C_in: unordered, H, W]", "[N, C_out: unordered, H, W]",
     "r0=sum(g^-1*C_in) r1=sum(k) r2=sum(k); "
     "in[i0, split(share(div(i1, g^-1*C_out), 1), share(r0, 1)), unfold(i2, share(r1, 1)), unfold(i3, share(r2, 1))] "
     "expand[share(mod(i1, g^-1*C_out), 1)] w1[div(i1, g^-1*C_out), mod(i1, g^-1*C_out), r0, r1, r2]"},
    {"depthwise-conv2d", "k x k depthwise convolution (one filter per channel), same padding",
     "N=8, C_in=16, H=28, W=28; k=3", "[N, C_in: unordered, H, W]", "[N, C_in: unordered, H, W]",
     "r0=sum(k) r1=sum(k); in[i0, share(i1, 1), unfold(i2, share(r0, 1)), unfold(i3, share(r1, 1))] "
     "w1[i1, r0, r1]"},
    {"strided-conv2d", "k x k convolution with stride s and padding k/2 (output H/s x W/s)",
     "N=8, C_in=16, C_out=16, H=28, W=28; k=3, s=2", "[N, C_in: unordered, H, W]",
     "[N, C_out: unordered, s^-1*H, s^-1*W]",
     "r0=sum(C_in) r1=sum(k) r2=sum(k); "
     "in[i0, share(r0, 1), unfold(stride(i2, s), share(r1, 1)), unfold(stride(i3, s), share(r2, 1))] "
     "expand[share(i1, 1)] w1[i1, r0, r1, r2]"},
    {"linear", "fully connected layer, weight [C_out, C_in]", "N=8, C_in=64, C_out=32", "[N, C_in: unordered]",
     "[N, C_out: unordered]", "r0=sum(C_in); in[i0, share(r0, 1)] expand[share(i1, 1)] w1[i1, r0]"},
    {"avgpool2d", "k x k average pooling with stride k (output H/k x W/k)", "N=8, C_in=16, H=28, W=28; k=2",
     "[N, C_in: unordered, H, W]", "[N, C_in: unordered, k^-1*H, k^-1*W]",
     "r0=mean(k) r1=mean(k); in[i0, i1, split(i2, r0), split(i3, r1)]"},
};

const syno_builtin_t *syno_builtin_at(int i) {
  return i >= 0 && i < (int)(sizeof builtins / sizeof *builtins) ? &builtins[i] : NULL;
}

const syno_builtin_t *syno_builtin_find(const char *name) {
  for (int i = 0; syno_builtin_at(i); i++)
    if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}
