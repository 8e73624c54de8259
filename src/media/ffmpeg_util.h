// Internal to src/media: FFmpeg error translation.
#pragma once
#include <string>

extern "C" {
#include <libavutil/error.h>
}

namespace veil {
inline std::string AvError(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, buf, sizeof buf);
  return buf;
}
}  // namespace veil
