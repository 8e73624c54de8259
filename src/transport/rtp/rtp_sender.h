// Plain RTP video egress: compressed frames -> GStreamer payloader (one RTP
// stream: one SSRC, one sequence; run on Send's thread) -> Fanout: plain RTP
// viewers' UDP sockets written on that thread without waiting, other sinks
// (WebRTC) through a queue and thread each. The RTP timestamps of the input are
// preserved, so a viewer's frame can be matched to the publisher's.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "media/codec.h"
#include "transport/gst_util.h"
#include "transport/rtp/fanout.h"
#include "media/video_codec.h"

namespace veil {

struct RtpSenderConfig {
  VideoCodec codec = VideoCodec::kVp8;
  int payload_type = 96;
  int mtu = 1200;
  size_t viewer_queue_frames = 8;  // per viewer; beyond it the viewer drops to the next keyframe
  uint32_t ssrc = 0;               // 0: random
  int seqnum_offset = -1;          // first sequence number; -1: random
  Fanout::OnSent on_sent;          // after a viewer sent a frame's last packet (its thread; Send's for a plain RTP viewer)
  Fanout::OnDrop on_drop;          // a viewer dropped and waits for a keyframe
};
Status Validate(const RtpSenderConfig& c);

class RtpSender {
 public:
  static Result<std::unique_ptr<RtpSender>> Start(const RtpSenderConfig& c);
  ~RtpSender();
  // Packetizes one frame and queues it for every viewer. One caller at a time.
  Status Send(const EncodedFrame& f, uint32_t rtp_timestamp);
  // Viewers are numeric unicast IPv4 addresses (policy on which ones is the caller's).
  Status AddViewer(const std::string& host, int port);
  bool RemoveViewer(const std::string& host, int port);
  // Any other viewer (a WebRTC connection): gets the same packets through its own fan-out queue.
  Status AddSink(const std::string& key, Fanout::Sink sink);
  bool RemoveSink(const std::string& key);
  size_t viewers() const { return fanout_->size(); }
  std::map<std::string, ViewerStats> viewer_stats() const { return fanout_->Stats(); }
  uint64_t viewer_drops() const { return fanout_->total_dropped(); }
  uint64_t frames_sent() const { return frames_; }
  // The pipeline's first error since the last call ("" when none).
  std::string PollError() { return pipeline_.PollError(); }

 private:
  RtpSender() = default;
  static GstFlowReturn OnPacket(GstElement* sink, gpointer self);
  GstPipeline pipeline_;
  GstPad* src_ = nullptr;  // ours, linked to the pipeline's first element: Send pushes into it
  VideoCodec codec_ = VideoCodec::kVp8;
  std::unique_ptr<Fanout> fanout_;
  bool have_base_ = false;
  uint32_t base_ts_ = 0;
  uint64_t frames_ = 0;
  // The frame being assembled from the payloader's packets (Send's thread, inside its push).
  std::shared_ptr<RtpFrame> assembling_;
  std::mutex key_mu_;
  std::map<uint32_t, bool> keyframes_;  // rtp ts -> keyframe, for frames in the payloader; guarded by key_mu_
};

}  // namespace veil
