// In-memory video codecs for live sessions: compressed frames in, pooled
// I420 frames out (decoder), and the reverse (encoder). No container.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"

struct AVCodecContext;
struct AVFrame;
struct AVPacket;
struct SwsContext;

namespace veil {

struct EncodedFrame {
  std::vector<uint8_t> data;
  int64_t pts = 0;
  bool keyframe = false;
  double arrival_ms = 0;  // live input: when the frame's first packet arrived (NowMs clock); 0 = unknown
};

class VideoEncoder {
 public:
  // codec: vp8 | h264 (Annex B with in-band parameter sets, for RTP).
  static Result<std::unique_ptr<VideoEncoder>> Open(const std::string& codec, const VideoInfo& vi,
                                                    const EncoderOptions& o);
  ~VideoEncoder();
  // Encodes `f` (its pts in vi's time base); finished frames are appended to
  // `out`. force_keyframe: e.g. a viewer joined or asked for one.
  Status Encode(const Frame& f, bool force_keyframe, std::vector<EncodedFrame>& out);
  Status Flush(std::vector<EncodedFrame>& out);

 private:
  VideoEncoder() = default;
  Status Drain(std::vector<EncodedFrame>& out);
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
};

class VideoDecoder {
 public:
  // codec: vp8 | h264.
  static Result<std::unique_ptr<VideoDecoder>> Open(const std::string& codec, int threads);
  ~VideoDecoder();
  // Decodes one compressed frame and appends 0..n frames to `out`. A corrupt
  // frame is an error; the decoder stays usable for the next one.
  Status Decode(const uint8_t* data, size_t size, int64_t pts, std::vector<FramePtr>& out);
  int64_t errors() const { return errors_; }

 private:
  VideoDecoder() = default;
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* pkt_ = nullptr;
  SwsContext* sws_ = nullptr;
  std::shared_ptr<FramePool> pool_;
  int64_t errors_ = 0;
  int64_t index_ = 0;
};

}  // namespace veil
