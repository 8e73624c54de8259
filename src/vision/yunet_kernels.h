// The layers of YuNet's forward pass as veil runs them natively (vision/yunet_engine.h):
// channels-last (HWC) float tensors, one image at a time, no allocation. The same source
// (yunet_kernels.inc) is compiled twice: once for any x86-64 (or other) CPU, once with AVX2 and
// FMA; YuNetKernelsFor() picks by what the CPU running it has.
#pragma once

namespace veil {

struct YuNetKernels {
  const char* isa;  // "avx2" or "generic"
  // YuNet's first layer: 3x3 stride-2 convolution, 3 -> 16 channels, bias, ReLU. `in` is the
  // image as HWC floats with a 1-pixel zero border: (h + 2) x (w + 2) x 3 for an h x w image
  // (h, w even); `out` is (h / 2) x (w / 2) x 16. `w` is [ky][kx][c][16], `b` [16].
  void (*conv0)(const float* in, int h, int w, const float* wt, const float* b, float* out);
  // One block: pointwise convolution ci -> co with bias, then a 3x3 depthwise convolution
  // (padding 1) with bias, then ReLU when `relu`. `in` is h x w x ci, `out` h x w x co.
  // `wpw` is [ci][co], `wdw` [9][co]. `ring` is scratch of at least 4 x (w + 2) x co floats.
  // Returns false for a (ci, co) pair it has no kernel for (16/32/64 -> 16/32/64).
  bool (*pw_dw)(const float* in, int h, int w, int ci, int co, const float* wpw, const float* bpw,
                const float* wdw, const float* bdw, bool relu, float* out, float* ring);
  // 2x2 max pooling, stride 2: `in` h x w x c (h, w even, c a multiple of 8) -> (h/2) x (w/2) x c.
  void (*max_pool)(const float* in, int h, int w, int c, float* out);
  // out = nearest-neighbour 2x upsampling of `small` ((h/2) x (w/2) x c) + `big` (h x w x c).
  void (*up_add)(const float* small, const float* big, int h, int w, int c, float* out);
};

const YuNetKernels& YuNetKernelsGeneric();
const YuNetKernels& YuNetKernelsAvx2();
// AVX2 + FMA where the CPU has both, else the generic build.
const YuNetKernels& YuNetKernelsFor();

}  // namespace veil
