// Internal to src/media: FFmpeg error translation, and opening inputs the safe way.
#pragma once
#include <string>

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
}

namespace veil {

// The largest picture a decoder accepts: a stream that declares more (an H.264 SPS of
// 16384x16384) is refused before its frames are allocated. Live sessions: 4K; files: 8K.
constexpr int64_t kMaxLivePixels = 4096LL * 2304;
constexpr int64_t kMaxFilePixels = 8192LL * 4320;

// avformat_open_input for local files only: the file protocol alone (a playlist or concat
// list inside a file cannot make veil open network URLs or other protocols).
inline int OpenLocalInput(AVFormatContext** fmt, const std::string& path) {
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "protocol_whitelist", "file", 0);
  const int err = avformat_open_input(fmt, path.c_str(), nullptr, &opts);
  av_dict_free(&opts);
  return err;
}

inline std::string AvError(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, buf, sizeof buf);
  return buf;
}
}  // namespace veil
