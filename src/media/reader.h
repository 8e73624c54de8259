// Demux + decode any FFmpeg-readable file (IVF/WebM VP8, MP4/MKV H.264, Y4M, ...)
// into pooled I420 frames; audio packets come out untouched for pass-through.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"

namespace veil {

struct ReaderOptions {
  int decoder_threads = 1;
  size_t max_pooled_frames = 8;
  int max_corrupt_packets = 50;  // give up on the input after this many undecodable packets
};

struct EndOfStream {};
using ReadItem = std::variant<FramePtr, PassthroughPacket, EndOfStream>;

class MediaReader {
 public:
  static Result<std::unique_ptr<MediaReader>> Open(const std::string& path, const ReaderOptions& o = {});
  ~MediaReader();
  const VideoInfo& info() const { return info_; }
  // Next decoded frame or audio packet; EndOfStream at the end or after a fatal input error.
  ReadItem Next();
  // After EndOfStream: OK for a clean end, otherwise what went wrong (frames
  // returned before it are good).
  const Status& end_status() const { return end_status_; }
  int corrupt_packets() const { return corrupt_packets_; }
  int64_t frames_decoded() const { return frames_; }

  struct Impl;  // FFmpeg state (media/reader.cpp)
  friend class MediaWriter;  // reads the audio streams' parameters for pass-through

 private:
  MediaReader() = default;
  std::optional<FramePtr> ReceiveFrame();
  std::unique_ptr<Impl> impl_;
  VideoInfo info_;
  Status end_status_;
  int corrupt_packets_ = 0;
  int64_t frames_ = 0;
  bool draining_ = false;
  bool done_ = false;
  int max_corrupt_ = 50;
};

}  // namespace veil
