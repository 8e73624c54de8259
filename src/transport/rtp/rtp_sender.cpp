#include "transport/rtp/rtp_sender.h"

#include <gst/app/gstappsrc.h>
#include <gio/gio.h>

namespace veil {

Status Validate(const RtpSenderConfig& c) {
  if (c.codec != "vp8" && c.codec != "h264") return Status::Error("RTP codec must be vp8 or h264, got '" + c.codec + "'");
  if (c.payload_type < 96 || c.payload_type > 127) return Status::Error("RTP payload type must be dynamic (96-127)");
  if (c.mtu < 200 || c.mtu > 9000) return Status::Error("RTP MTU must be in [200, 9000]");
  return Status::Ok();
}

Result<std::unique_ptr<RtpSender>> RtpSender::Start(const RtpSenderConfig& c) {
  if (Status s = Validate(c); !s) return s;
  const bool vp8 = c.codec == "vp8";
  // The payloader's timestamp-offset is set on the first frame so that
  // outgoing RTP timestamps equal the incoming ones.
  const std::string desc =
      std::string("appsrc name=src is-live=true format=time do-timestamp=false caps=") +
      (vp8 ? "video/x-vp8" : "video/x-h264,stream-format=byte-stream,alignment=au") + " ! " +
      (vp8 ? "rtpvp8pay" : "rtph264pay config-interval=-1") + " name=pay pt=" + std::to_string(c.payload_type) +
      " mtu=" + std::to_string(c.mtu) +
      " ! multiudpsink name=sink sync=false async=false buffer-size=" + std::to_string(4 << 20);  // keyframe bursts
  auto p = GstPipeline::Parse(desc);
  if (!p) return p.status();
  std::unique_ptr<RtpSender> s(new RtpSender());
  s->pipeline_ = std::move(*p);
  s->src_ = s->pipeline_.element("src");
  s->sink_ = s->pipeline_.element("sink");
  return s;
}

RtpSender::~RtpSender() {
  if (src_) gst_app_src_end_of_stream(GST_APP_SRC(src_));
  pipeline_.Stop();
  if (src_) gst_object_unref(src_);
  if (sink_) gst_object_unref(sink_);
}

Status RtpSender::Send(const EncodedFrame& f, uint32_t rtp_ts) {
  if (f.data.empty()) return Status::Error("empty frame");
  if (!have_base_) {
    base_ts_ = rtp_ts;
    GstElement* pay = pipeline_.element("pay");
    g_object_set(pay, "timestamp-offset", guint(rtp_ts), nullptr);
    gst_object_unref(pay);
    if (Status st = pipeline_.Play(); !st) return st;
    have_base_ = true;
  }
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, f.data.size(), nullptr);
  gst_buffer_fill(buf, 0, f.data.data(), f.data.size());
  // RTP time since the first frame (wrap-safe in 32 bits) -> running time.
  const uint32_t delta = rtp_ts - base_ts_;
  // Round up: the payloader converts back with a floor, which must give `delta` exactly.
  GST_BUFFER_PTS(buf) = gst_util_uint64_scale_int_ceil(delta, GST_SECOND, 90000);
  if (!f.keyframe) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
  const GstFlowReturn ret = gst_app_src_push_buffer(GST_APP_SRC(src_), buf);  // takes ownership
  if (ret != GST_FLOW_OK) return Status::Error(std::string("RTP sender: ") + gst_flow_get_name(ret));
  ++frames_;
  return Status::Ok();
}

Status RtpSender::AddViewer(const std::string& host, int port) {
  if (port <= 0 || port > 65535) return Status::Error("viewer port must be in [1, 65535]");
  GInetAddress* addr = g_inet_address_new_from_string(host.c_str());
  if (!addr) return Status::Error("viewer host must be a numeric IP address, got '" + host + "'");
  const bool ok = !g_inet_address_get_is_multicast(addr) && !g_inet_address_get_is_any(addr);
  g_object_unref(addr);
  if (!ok) return Status::Error("viewer host must be a unicast address, got '" + host + "'");
  std::lock_guard lk(mu_);
  if (!viewers_.insert({host, port}).second) return Status::Ok();
  g_signal_emit_by_name(sink_, "add", host.c_str(), port, nullptr);
  return Status::Ok();
}

void RtpSender::RemoveViewer(const std::string& host, int port) {
  std::lock_guard lk(mu_);
  if (viewers_.erase({host, port})) g_signal_emit_by_name(sink_, "remove", host.c_str(), port, nullptr);
}

size_t RtpSender::viewers() const {
  std::lock_guard lk(mu_);
  return viewers_.size();
}

}  // namespace veil
