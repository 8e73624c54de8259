// One live session: RTP in -> decode -> privacy stage (asynchronous detection
// through the shared scheduler) -> encode -> RTP out to every viewer.
// Threads: the receiver's streaming thread decodes every frame (inter frames
// depend on it) and hands it over a bounded latest-frame-wins queue to the
// session's worker; the worker drops a frame that is already older than the
// budget (stale drop, counted) before any expensive work, then pixelates,
// encodes and sends it. Nothing waits on inference.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/latest_queue.h"
#include "core/metrics.h"
#include "media/codec.h"
#include "privacy/privacy_stage.h"
#include "transport/rtp/rtp_receiver.h"
#include "transport/rtp/rtp_sender.h"

namespace veil {

struct LiveSessionConfig {
  std::string codec = "vp8";     // ingest and egress codec: vp8 | h264
  PrivacyConfig privacy;
  EncoderOptions encoder;
  int decode_threads = 1;
  double budget_ms = 33.0;       // a frame older than this after decoding is dropped as stale
  size_t queue_frames = 2;       // decoded frames waiting for the worker
  int jitter_ms = 40;
};

struct LiveSessionStats {
  uint64_t frames_in = 0, frames_out = 0, stale_drops = 0, decode_errors = 0, viewers = 0;
  PrivacyCounters privacy;
  RtpReceiverStats rtp;
  double last_packet_age_ms = -1;  // -1: nothing received yet
};

class LiveSession {
 public:
  static Result<std::unique_ptr<LiveSession>> Start(const std::string& id, const LiveSessionConfig& c,
                                                    InferenceScheduler* scheduler, uint64_t scheduler_session,
                                                    MetricsRegistry* metrics);
  ~LiveSession();  // stops the worker and both pipelines
  const std::string& id() const { return id_; }
  int ingest_port() const { return receiver_->port(); }
  // A new viewer gets a keyframe on the next frame.
  Status AddViewer(const std::string& host, int port);
  void RemoveViewer(const std::string& host, int port);
  // Takes effect on the next frame the worker processes.
  void SetMode(Mode m) { mode_.store(m); }
  Mode mode() const { return mode_.load(); }
  LiveSessionStats stats() const;

 private:
  struct Decoded {
    FramePtr frame;
    uint32_t rtp_ts = 0;
    double decoded_ms = 0;
  };
  LiveSession(const std::string& id, const LiveSessionConfig& c);
  void OnEncoded(EncodedFrame&& f, uint32_t rtp_ts);  // receiver thread
  void Work();                                         // worker thread

  const std::string id_;
  const LiveSessionConfig cfg_;
  std::unique_ptr<RtpReceiver> receiver_;
  std::unique_ptr<RtpSender> sender_;
  std::unique_ptr<VideoDecoder> decoder_;     // receiver thread only
  std::unique_ptr<VideoEncoder> encoder_;     // worker thread only (created on the first frame)
  std::unique_ptr<PrivacyStage> privacy_;     // worker thread only
  InferenceScheduler* scheduler_ = nullptr;
  uint64_t scheduler_session_ = 0;
  LatestQueue<Decoded> queue_;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  std::atomic<Mode> mode_{Mode::kAnonymize};
  std::atomic<bool> want_keyframe_{true};
  std::atomic<uint64_t> frames_in_{0}, frames_out_{0}, stale_{0}, decode_errors_{0};
  std::atomic<double> last_packet_ms_{-1};
  mutable std::mutex privacy_mu_;
  PrivacyCounters privacy_counters_;  // guarded by privacy_mu_ (copied from the worker)
  // Metrics (the registry outlives the session).
  MetricsRegistry* metrics_ = nullptr;
  Histogram *m_queue_ = nullptr, *m_decode_ = nullptr, *m_privacy_ = nullptr, *m_encode_ = nullptr,
            *m_send_ = nullptr, *m_total_ = nullptr;
  Counter *m_stale_ = nullptr, *m_fail_closed_ = nullptr, *m_in_ = nullptr, *m_out_ = nullptr;
};

}  // namespace veil
