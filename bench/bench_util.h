#pragma once
#include <random>

#include "core/frame.h"

namespace veil::bench {
// A frame of uniform noise (worst case for the mosaic's and codecs' work).
inline FramePtr NoiseFrame(int w = 1280, int h = 720) {
  auto f = MakeFrame(w, h);
  std::mt19937 rng(1);
  for (const Plane* p : {&f->y, &f->u, &f->v})
    for (int y = 0; y < p->height; ++y)
      for (int x = 0; x < p->width; ++x) p->row(y)[x] = uint8_t(rng());
  return f;
}
}  // namespace veil::bench
