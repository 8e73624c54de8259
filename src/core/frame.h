// I420 frames backed by a buffer pool: steady-state decoding allocates nothing.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace veil {

struct Plane {
  uint8_t* data = nullptr;
  int stride = 0;
  int width = 0;
  int height = 0;
  uint8_t* row(int y) const { return data + static_cast<ptrdiff_t>(y) * stride; }
};

// A planar 4:2:0 frame. Chroma planes are ceil(w/2) x ceil(h/2).
struct Frame {
  int width = 0;
  int height = 0;
  int64_t pts = 0;     // in the source stream's time base
  int64_t index = 0;   // 0-based decode order
  Plane y, u, v;
  std::vector<uint8_t> storage;  // owns the pixels; reused by the pool
};

using FramePtr = std::shared_ptr<Frame>;

// Hands out frames of one size; a released frame goes back to the free list
// instead of the heap. The pool outlives no frame: frames keep it alive.
class FramePool : public std::enable_shared_from_this<FramePool> {
 public:
  static std::shared_ptr<FramePool> Create(int width, int height, size_t max_free = 16);
  FramePtr Acquire();
  int width() const { return width_; }
  int height() const { return height_; }
  size_t allocations() const;  // frames ever allocated (tests: no churn)

 private:
  FramePool(int w, int h, size_t max_free) : width_(w), height_(h), max_free_(max_free) {}
  void Release(Frame* f);
  int width_, height_;
  size_t max_free_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Frame>> free_;  // guarded by mu_
  size_t allocations_ = 0;                    // guarded by mu_
};

// Allocates a standalone frame (tests, tools). Stride == width.
FramePtr MakeFrame(int width, int height);
void CopyFrame(const Frame& src, Frame& dst);  // same size required

// A 32x18 luma thumbnail: each cell the mean of 16 samples (4x4, evenly spread over the cell),
// ~0.01 ms at 720p. Two thumbnails' mean absolute difference says whether a frame is a new
// picture: the privacy stage's scene cut (privacy.scene_cut_threshold) and the encoder's fast
// cuts (EncoderOptions::fast_cuts) use this one measure.
struct LumaThumb {
  static constexpr int kW = 32, kH = 18;
  std::array<uint8_t, kW * kH> v{};
  static LumaThumb Of(const Frame& f);
  double MeanAbsDiff(const LumaThumb& o) const;
};

}  // namespace veil
