// Public media types: nothing here exposes FFmpeg beyond opaque declarations.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

struct AVPacket;

namespace veil {

struct VideoInfo {
  int width = 0, height = 0;
  int tb_num = 1, tb_den = 1;   // time base of Frame::pts
  double fps = 0;               // nominal frame rate
  std::string codec;            // e.g. "vp8", "h264"
  int64_t frames_estimate = 0;  // 0 when unknown
  int audio_streams = 0;
};

// A compressed packet copied through untouched (audio).
class PassthroughPacket {
 public:
  explicit PassthroughPacket(AVPacket* p, int source_stream) : pkt_(p), stream_(source_stream) {}
  ~PassthroughPacket();
  PassthroughPacket(PassthroughPacket&&) noexcept;
  PassthroughPacket& operator=(PassthroughPacket&&) noexcept;
  PassthroughPacket(const PassthroughPacket&) = delete;
  AVPacket* get() const { return pkt_; }
  int source_stream() const { return stream_; }

 private:
  AVPacket* pkt_;
  int stream_;
};

struct EncoderOptions {
  std::string codec;        // "vp8" | "h264" | "rawvideo"; empty = from the output extension
  int bitrate_kbps = 0;     // 0 = by resolution (about 2500 kbps at 720p30)
  int threads = 1;
  int keyint_frames = 60;   // a keyframe at least this often
  // libvpx cpu-used in realtime mode: negative = fixed speed |n|, positive =
  // speed adapted by libvpx to its CPU estimate.
  int vp8_speed = -8;
  // Live VP8: a frame whose picture differs from the encoder's previous input as a scene cut
  // does (the mean absolute difference of 32x18 luma thumbnails above kCutThumbnailDiff) is
  // encoded at cpu-used 16, then the speed goes back. Such a frame is coded
  // mostly intra, and costs ~2x a usual one at cpu-used -8.
  bool fast_cuts = true;
  // Live VP8's speed ladder (Vp8SpeedLadder, media/codec.h): past cpu-used 10 the faster steps
  // raise libvpx's static threshold instead of cpu-used alone. false: cpu-used up to 16.
  bool vp8_static_steps = true;
  std::string x264_preset = "veryfast";
  std::string x264_profile;  // "" = x264's choice (high); live sessions use constrained baseline (WebRTC's 42e01f)
};

// The encoder options' ranges, declared here once: the configuration (encoder.*) and every
// encoder (FFmpeg's and libvpx's own) check them with this.
Status Validate(const EncoderOptions& o);
// The same, and the output size.
Status ValidateEncoder(const VideoInfo& vi, const EncoderOptions& o);
// A decoder's thread count (decoder.threads), checked by the configuration and by every decoder.
Status ValidateDecoderThreads(int threads);
// The bitrate an encoder aims at: o.bitrate_kbps, or by resolution (about 2500 kbps at 720p30).
int64_t TargetKbps(const VideoInfo& vi, const EncoderOptions& o);

}  // namespace veil
