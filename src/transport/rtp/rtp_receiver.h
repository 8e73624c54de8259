// Plain RTP video ingest on GStreamer: udpsrc -> rtpjitterbuffer (reordering,
// loss and jitter accounting) -> depayloader -> compressed frames handed to
// the session (decoding stays in src/media). Binds loopback by default.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/mutex.h"
#include "core/status.h"
#include "media/codec.h"
#include "transport/gst_util.h"
#include "transport/rtp/rtp_admission.h"
#include "media/video_codec.h"

namespace veil {

struct RtpReceiverConfig {
  VideoCodec codec = VideoCodec::kVp8;
  std::string address = "127.0.0.1";
  int port = 0;                     // 0 = any free port (see port())
  int payload_type = 96;
  int latency_ms = 40;              // jitter buffer depth
  // A 720p VP8 keyframe is ~100 packets in one burst: ask for a socket buffer
  // that holds several (the kernel caps it at net.core.rmem_max).
  int socket_buffer_bytes = 4 << 20;
};
Status Validate(const RtpReceiverConfig& c);

struct RtpReceiverStats {
  uint64_t packets = 0;   // pushed out of the jitter buffer
  uint64_t lost = 0;      // never arrived (sequence gaps)
  uint64_t late = 0;      // arrived after their play-out time
  double jitter_ms = 0;   // RFC 3550 inter-arrival jitter
  uint64_t frames = 0;    // complete compressed frames delivered
  uint64_t foreign = 0;   // dropped before the jitter buffer: not RTP, other payload type, other SSRC
  uint64_t ssrc_changes = 0;  // the publisher restarted with a new SSRC
  uint64_t restarts = 0;      // the publisher restarted with its SSRC: new sequence and timestamp bases
};

class RtpReceiver {
 public:
  // Called on a GStreamer streaming thread for every complete frame, with the
  // frame's RTP timestamp (preserved for end-to-end latency matching) and
  // frame.arrival_ms set to when its first packet came off the socket.
  using OnFrame = std::function<void(EncodedFrame&& frame, uint32_t rtp_timestamp)>;
  static Result<std::unique_ptr<RtpReceiver>> Start(const RtpReceiverConfig& c, OnFrame on_frame);
  ~RtpReceiver();
  int port() const { return port_; }
  RtpReceiverStats stats() const;
  // The pipeline's first error since the last call ("" when none).
  std::string PollError() { return pipeline_.PollError(); }

 private:
  RtpReceiver() = default;
  static GstFlowReturn OnSample(GstElement* sink, gpointer self);
  static GstPadProbeReturn OnRtp(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  static GstPadProbeReturn OnArrival(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  GstPipeline pipeline_;
  GstElement* jitterbuffer_ = nullptr;
  OnFrame on_frame_;
  int port_ = 0;
  std::atomic<uint64_t> frames_{0};
  Mutex ts_mu_;
  // PTS -> RTP timestamp of the packets entering the depayloader (small ring).
  struct TsEntry {
    GstClockTime pts = GST_CLOCK_TIME_NONE;
    uint32_t rtp = 0;
  };
  TsEntry ts_ring_[64] GUARDED_BY(ts_mu_);
  size_t ts_next_ GUARDED_BY(ts_mu_) = 0;
  // RTP timestamp -> arrival of its first packet at the socket (small ring).
  struct ArrivalEntry {
    uint32_t rtp = 0;
    double ms = 0;
  };
  ArrivalEntry arrival_ring_[64] GUARDED_BY(ts_mu_);
  size_t arrival_next_ GUARDED_BY(ts_mu_) = 0;
  // SSRC latching and restart following (udpsrc's streaming thread; its counters are atomic).
  std::unique_ptr<RtpAdmission> admission_;
  std::atomic<uint64_t> not_rtp_{0};  // datagrams that are not RTP at all
};

}  // namespace veil
