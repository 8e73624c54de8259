// Plain RTP video egress on GStreamer: compressed frames -> payloader ->
// multiudpsink, one destination per viewer. The RTP timestamps of the input
// are preserved, so a viewer's frame can be matched to the publisher's.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/status.h"
#include "media/codec.h"
#include "transport/gst_util.h"

namespace veil {

struct RtpSenderConfig {
  std::string codec = "vp8";  // vp8 | h264
  int payload_type = 96;
  int mtu = 1200;
};
Status Validate(const RtpSenderConfig& c);

class RtpSender {
 public:
  static Result<std::unique_ptr<RtpSender>> Start(const RtpSenderConfig& c);
  ~RtpSender();
  // Packetizes and sends one frame to every viewer. Thread-compatible: one caller.
  Status Send(const EncodedFrame& f, uint32_t rtp_timestamp);
  // Viewers must be numeric loopback/unicast addresses; duplicates are ignored.
  Status AddViewer(const std::string& host, int port);
  void RemoveViewer(const std::string& host, int port);
  size_t viewers() const;
  uint64_t frames_sent() const { return frames_; }

 private:
  RtpSender() = default;
  GstPipeline pipeline_;
  GstElement* src_ = nullptr;
  GstElement* sink_ = nullptr;
  bool have_base_ = false;
  uint32_t base_ts_ = 0;
  uint64_t frames_ = 0;
  mutable std::mutex mu_;
  std::set<std::pair<std::string, int>> viewers_;  // guarded by mu_
};

}  // namespace veil
