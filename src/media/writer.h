// Encode I420 frames (VP8 in IVF/WebM, H.264 in MP4/MKV, raw in Y4M) and mux
// them with audio packets copied through unchanged.
#pragma once
#include <memory>
#include <string>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"

namespace veil {

class MediaReader;

class MediaWriter {
 public:
  // `audio_from` (may be null): its audio streams are copied into the output
  // when the container can hold them (IVF cannot; skipped ones are reported).
  static Result<std::unique_ptr<MediaWriter>> Open(const std::string& path, const VideoInfo& video,
                                                   const EncoderOptions& o, const MediaReader* audio_from);
  ~MediaWriter();  // finishes the file if Finish() was not called
  Status WriteFrame(const Frame& f);
  Status WritePassthrough(const PassthroughPacket& p);
  // Flushes the encoder and writes the trailer; the file is valid afterwards.
  Status Finish();
  const std::string& codec() const { return codec_; }
  int audio_streams_copied() const { return audio_copied_; }
  int audio_streams_skipped() const { return audio_skipped_; }
  int64_t bytes_written() const;

  struct Impl;

 private:
  MediaWriter() = default;
  Status Drain(bool flush);
  std::unique_ptr<Impl> impl_;
  std::string codec_;
  int audio_copied_ = 0, audio_skipped_ = 0;
  bool finished_ = false;
  int64_t bytes_ = 0;
};

// Codec chosen for an output path when EncoderOptions::codec is empty.
Result<std::string> CodecForPath(const std::string& path);

}  // namespace veil
