// A still of a session's outgoing picture for people (the operator page's
// thumbnails): the last frame that left the privacy stage, scaled down and
// JPEG-encoded on request, never per frame.
#pragma once
#include <cstdint>
#include <vector>

#include "core/frame.h"
#include "core/status.h"

namespace veil {

constexpr int kSnapshotMaxWidth = 480;

struct JpegImage {
  std::vector<uint8_t> bytes;
  int width = 0, height = 0;
};

// Scales an I420 frame to at most max_width px wide (aspect kept, never
// enlarged, even sizes; area filter) and encodes it as a baseline JPEG.
Result<JpegImage> EncodeThumbnail(const Frame& f, int max_width, int quality = 80);

}  // namespace veil
