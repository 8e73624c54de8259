// Compressed packets straight from a container, for sending a file as a live
// stream (publisher, load tool): the video stream (VP8, or H.264 converted
// to Annex B) and an Opus audio stream when there is one. No decoding.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace veil {

struct DemuxedPacket {
  bool audio = false;
  std::vector<uint8_t> data;
  int64_t pts_us = 0;   // presentation time from the start of the file, microseconds
  bool keyframe = false;
};

struct DemuxInfo {
  std::string video_codec;  // vp8 | h264
  int width = 0, height = 0;
  double fps = 30;
  bool has_opus = false;
  int64_t duration_us = 0;  // of the video (last pts + one frame), known after the first full pass
};

class Demuxer {
 public:
  // Fails on files without VP8/H.264 video.
  static Result<std::unique_ptr<Demuxer>> Open(const std::string& path);
  ~Demuxer();
  const DemuxInfo& info() const { return info_; }
  // Reads every packet of the file into memory (live senders loop over it).
  Result<std::vector<DemuxedPacket>> ReadAll(size_t max_bytes = size_t(512) << 20);

 private:
  Demuxer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DemuxInfo info_;
};

}  // namespace veil
