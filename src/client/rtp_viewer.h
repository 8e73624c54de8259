// Receives one session's egress as a viewer: video RTP (jitter buffer,
// depayloading) and, optionally, the relayed Opus packets. Can record the
// video as received (VP8 -> IVF, H.264 -> Annex B) without re-encoding, and
// decode it for checks. Used by `veil view`, the demo, the load tool and the
// integration tests.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/frame.h"
#include "core/status.h"
#include "media/codec.h"
#include "transport/net/udp.h"
#include "transport/rtp/rtp_receiver.h"

namespace veil {

struct ViewerConfig {
  VideoCodec codec = VideoCodec::kVp8;
  std::string address = "127.0.0.1";
  bool audio = true;           // also open a port for the relayed audio
  bool decode = false;         // decode every frame (on_frame gets it)
  std::string record_path;     // "" = no recording
  int jitter_ms = 40;
};

struct ViewerCounters {
  uint64_t frames = 0, keyframes = 0, bytes = 0, decoded = 0, decode_errors = 0, audio_packets = 0;
  double first_ms = -1, last_ms = -1;  // arrival of the first and last frame (NowMs clock)
  RtpReceiverStats rtp;
};

class RtpViewer {
 public:
  // With decode: every decoded frame, with its RTP timestamp and arrival time (receiver thread).
  using OnFrame = std::function<void(const FramePtr& frame, uint32_t rtp_ts, double arrival_ms)>;
  // Every compressed frame as it arrives (receiver thread), e.g. for latency matching.
  using OnArrival = std::function<void(uint32_t rtp_ts, double arrival_ms, size_t bytes, bool keyframe)>;
  static Result<std::unique_ptr<RtpViewer>> Start(const ViewerConfig& c, OnFrame on_frame = {}, OnArrival on_arrival = {});
  ~RtpViewer();
  int video_port() const { return rx_->port(); }
  int audio_port() const { return audio_.fd() >= 0 ? audio_port_ : 0; }
  ViewerCounters counters() const;

 private:
  RtpViewer() = default;
  void OnEncoded(EncodedFrame&& f, uint32_t ts);
  void WriteRecord(const EncodedFrame& f, uint32_t ts);
  ViewerConfig cfg_;
  OnFrame on_frame_;
  OnArrival on_arrival_;
  std::unique_ptr<RtpReceiver> rx_;
  std::unique_ptr<VideoDecoder> dec_;
  UdpSocket audio_;
  int audio_port_ = 0;
  std::thread audio_thread_;
  std::atomic<bool> stop_{false};
  FILE* rec_ = nullptr;
  uint32_t rec_first_ts_ = 0;
  uint32_t rec_frames_ = 0;
  bool rec_started_ = false;
  mutable std::mutex mu_;
  ViewerCounters c_;  // guarded by mu_
};

}  // namespace veil
