#include "media/media_types.h"

#include <algorithm>

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace veil {

Status ValidateEncoder(const VideoInfo& vi, const EncoderOptions& o) {
  if (vi.width <= 0 || vi.height <= 0 || vi.width > 8192 || vi.height > 8192) return Status::Error("output size out of range");
  return Validate(o);
}

Status ValidateDecoderThreads(int threads) {
  if (threads < 1 || threads > 64) return Status::Error("decoder threads must be in [1, 64], got " + std::to_string(threads));
  return Status::Ok();
}

Status Validate(const EncoderOptions& o) {
  if (!o.codec.empty() && o.codec != "vp8" && o.codec != "h264" && o.codec != "rawvideo")
    return Status::Error("encoder codec must be vp8, h264 or rawvideo, got '" + o.codec + "'");
  if (o.threads < 1 || o.threads > 64) return Status::Error("encoder threads must be in [1, 64]");
  if (o.bitrate_kbps < 0 || o.bitrate_kbps > 200000) return Status::Error("bitrate must be in [0, 200000] kbps");
  if (o.keyint_frames < 1 || o.keyint_frames > 10000) return Status::Error("keyint must be in [1, 10000] frames");
  if (o.vp8_speed < -16 || o.vp8_speed > 16) return Status::Error("vp8 speed must be in [-16, 16]");
  return Status::Ok();
}

int64_t TargetKbps(const VideoInfo& vi, const EncoderOptions& o) {
  const double fps = vi.fps > 0 ? vi.fps : 30.0;
  return o.bitrate_kbps > 0 ? o.bitrate_kbps
                            : std::clamp<int64_t>(int64_t(double(vi.width) * vi.height * fps / 11000), 300, 20000);
}

PassthroughPacket::~PassthroughPacket() {
  if (pkt_) av_packet_free(&pkt_);
}
PassthroughPacket::PassthroughPacket(PassthroughPacket&& o) noexcept : pkt_(o.pkt_), stream_(o.stream_) {
  o.pkt_ = nullptr;
}
PassthroughPacket& PassthroughPacket::operator=(PassthroughPacket&& o) noexcept {
  if (this != &o) {
    if (pkt_) av_packet_free(&pkt_);
    pkt_ = o.pkt_;
    stream_ = o.stream_;
    o.pkt_ = nullptr;
  }
  return *this;
}
}  // namespace veil
