// Sends a file as a live RTP stream, paced at its real frame rate: video
// through the same payloader veil uses for egress, Opus audio one packet per
// RTP packet (RFC 7587). Loops with continuous RTP timestamps, so a short
// clip can feed a long session. Used by `veil publish`, the demo, the load
// tool and the integration tests.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "media/demuxer.h"
#include "transport/net/udp.h"
#include "transport/rtp/rtp_sender.h"

namespace veil {

struct MediaClip {
  DemuxInfo info;
  std::vector<DemuxedPacket> packets;
};
using ClipPtr = std::shared_ptr<const MediaClip>;
Result<ClipPtr> LoadClip(const std::string& path);

struct PublisherConfig {
  std::string host = "127.0.0.1";
  int video_port = 0;
  int audio_port = 0;        // 0: no audio sent
  bool loop = true;          // false: the file once
  double seconds = 0;        // stop after this long (0: never when looping)
  double start_delay_ms = 0; // e.g. to stagger keyframes across sessions
  // > 0: the first frame goes at this instant (core/clock.h NowMs) instead, so that several
  // publishers can keep fixed frame phases to one another (veil load --frame-phase).
  double start_at_ms = 0;
  // Its clock runs this many parts per million fast (> 0) or slow (< 0): frames are paced at
  // (1 + ppm / 1e6) x the file's rate and keep the file's RTP timestamps, as a camera whose
  // clock is off does (veil load --frame-phase drift).
  double clock_ppm = 0;
};

struct PublisherStats {
  uint64_t frames = 0, audio_packets = 0, loops = 0, send_errors = 0;
  bool finished = false;
};

class RtpPublisher {
 public:
  // Called on the publishing thread for each video frame, just before its packets go out: a
  // relay that forwards at once (bypass) can hand the frame to a local viewer before a call
  // after the send would have run, and the frame would then match no logged send.
  using OnFrameSent = std::function<void(uint32_t rtp_ts, double sent_ms)>;
  static Result<std::unique_ptr<RtpPublisher>> Start(ClipPtr clip, const PublisherConfig& c, OnFrameSent cb = {});
  ~RtpPublisher();  // Stop()
  void Stop();
  PublisherStats stats() const;

 private:
  RtpPublisher() = default;
  void Run();
  ClipPtr clip_;
  PublisherConfig cfg_;
  OnFrameSent cb_;
  std::unique_ptr<RtpSender> video_;
  UdpSocket audio_sock_;
  sockaddr_in audio_to_{};
  std::thread thread_;
  std::atomic<bool> stop_{false}, finished_{false};
  std::atomic<uint64_t> frames_{0}, audio_packets_{0}, loops_{0}, errors_{0};
};

}  // namespace veil
