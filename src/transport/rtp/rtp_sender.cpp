#include "transport/rtp/rtp_sender.h"

#include <gst/app/gstappsink.h>
#include <gst/rtp/gstrtpbuffer.h>

#include "transport/net/udp.h"

namespace veil {

Status Validate(const RtpSenderConfig& c) {
  if (c.payload_type < 96 || c.payload_type > 127) return Status::Error("RTP payload type must be dynamic (96-127)");
  if (c.mtu < 200 || c.mtu > 9000) return Status::Error("RTP MTU must be in [200, 9000]");
  if (c.viewer_queue_frames < 1 || c.viewer_queue_frames > 256)
    return Status::Error("viewer queue must hold 1..256 frames");
  if (c.seqnum_offset < -1 || c.seqnum_offset > 65535) return Status::Error("RTP seqnum offset must be -1 or 0..65535");
  return Status::Ok();
}

Result<std::unique_ptr<RtpSender>> RtpSender::Start(const RtpSenderConfig& c) {
  if (Status s = Validate(c); !s) return s;
  const VideoCodecInfo& vc = Info(c.codec);
  // The payloader's timestamp-offset is set on the first frame so that
  // outgoing RTP timestamps equal the incoming ones. (H.264's pay_prepare: media/video_codec.h.)
  // No appsrc: the caller's thread pushes each frame into the first element and the payloader
  // and the appsink's callback run inside that push (an appsrc hands every frame to a thread
  // of its own, and under load that thread's wake-up was the send stage's tail: 4.7 ms at the
  // p99 with four anonymized sessions on two cores, docs/figures.md).
  const std::string desc =
      std::string("capsfilter name=in caps=") + vc.stream_caps + " ! " +
      (*vc.pay_prepare ? std::string(vc.pay_prepare) + " ! " : std::string()) + vc.payloader +
      " name=pay pt=" + std::to_string(c.payload_type) +
      " mtu=" + std::to_string(c.mtu) + (c.ssrc ? " ssrc=" + std::to_string(c.ssrc) : std::string()) +
      (c.seqnum_offset >= 0 ? " seqnum-offset=" + std::to_string(c.seqnum_offset) : std::string()) + " ! appsink name=sink sync=false async=false emit-signals=false";
  auto p = GstPipeline::Parse(desc);
  if (!p) return p.status();
  std::unique_ptr<RtpSender> s(new RtpSender());
  s->pipeline_ = std::move(*p);
  s->codec_ = c.codec;
  GstElement* in = s->pipeline_.element("in");
  GstPad* in_sink = gst_element_get_static_pad(in, "sink");
  gst_object_unref(in);
  s->src_ = gst_pad_new("veil_src", GST_PAD_SRC);
  const bool linked = gst_pad_link(s->src_, in_sink) == GST_PAD_LINK_OK;
  gst_object_unref(in_sink);
  if (!linked) return Status::Error("RTP sender: cannot link the frame pad to the payloader");
  s->fanout_ = std::make_unique<Fanout>(c.viewer_queue_frames, c.on_sent, c.on_drop);
  GstElement* sink = s->pipeline_.element("sink");
  GstAppSinkCallbacks cb{};
  cb.new_sample = [](GstAppSink* k, gpointer self) { return OnPacket(GST_ELEMENT(k), self); };
  gst_app_sink_set_callbacks(GST_APP_SINK(sink), &cb, s.get(), nullptr);
  gst_object_unref(sink);
  return s;
}

RtpSender::~RtpSender() {
  pipeline_.Stop();  // no more packets after this
  fanout_.reset();   // viewer threads end
  if (src_) {
    gst_pad_set_active(src_, FALSE);
    if (GstPad* peer = gst_pad_get_peer(src_)) {
      gst_pad_unlink(src_, peer);
      gst_object_unref(peer);
    }
    gst_object_unref(src_);
  }
}

GstFlowReturn RtpSender::OnPacket(GstElement* sink, gpointer self) {
  auto* s = static_cast<RtpSender*>(self);
  GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  if (!sample) return GST_FLOW_OK;
  GstBuffer* buf = gst_sample_get_buffer(sample);
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  if (buf && gst_rtp_buffer_map(buf, GST_MAP_READ, &rtp)) {
    const uint32_t ts = gst_rtp_buffer_get_timestamp(&rtp);
    const bool marker = gst_rtp_buffer_get_marker(&rtp);
    gst_rtp_buffer_unmap(&rtp);
    if (s->assembling_ && s->assembling_->rtp_ts != ts) {  // a frame ended without a marker
      s->fanout_->Publish(std::move(s->assembling_));
      s->assembling_.reset();
    }
    if (!s->assembling_) {
      s->assembling_ = std::make_shared<RtpFrame>();
      s->assembling_->rtp_ts = ts;
      std::lock_guard lk(s->key_mu_);
      auto it = s->keyframes_.find(ts);
      if (it != s->keyframes_.end()) {
        s->assembling_->keyframe = it->second;
        s->keyframes_.erase(s->keyframes_.begin(), std::next(it));
      }
    }
    GstMapInfo map;
    if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
      s->assembling_->packets.emplace_back(map.data, map.data + map.size);
      gst_buffer_unmap(buf, &map);
    }
    if (marker) {
      s->fanout_->Publish(std::move(s->assembling_));
      s->assembling_.reset();
    }
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

Status RtpSender::Send(const EncodedFrame& f, uint32_t rtp_ts) {
  if (f.data.empty()) return Status::Error("empty frame");
  if (!have_base_) {
    base_ts_ = rtp_ts;
    GstElement* pay = pipeline_.element("pay");
    g_object_set(pay, "timestamp-offset", guint(rtp_ts), nullptr);
    gst_object_unref(pay);
    if (Status st = pipeline_.Play(); !st) return st;
    // The events a stream opens with, in order, then buffers: pushed from here, they run the
    // payloader on this thread.
    gst_pad_set_active(src_, TRUE);
    GstCaps* caps = gst_caps_from_string(Info(codec_).stream_caps);
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    const bool opened = gst_pad_push_event(src_, gst_event_new_stream_start("veil")) &&
                        gst_pad_push_event(src_, gst_event_new_caps(caps)) &&
                        gst_pad_push_event(src_, gst_event_new_segment(&seg));
    gst_caps_unref(caps);
    if (!opened) return Status::Error("RTP sender: the payloader refused the stream's start");
    have_base_ = true;
  }
  {
    std::lock_guard lk(key_mu_);
    if (keyframes_.size() > 256) keyframes_.clear();  // never grows if the payloader stalls
    keyframes_[rtp_ts] = f.keyframe;
  }
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, f.data.size(), nullptr);
  gst_buffer_fill(buf, 0, f.data.data(), f.data.size());
  // RTP time since the first frame (wrap-safe in 32 bits) -> running time.
  const uint32_t delta = rtp_ts - base_ts_;
  // Round up: the payloader converts back with a floor, which must give `delta` exactly.
  GST_BUFFER_PTS(buf) = gst_util_uint64_scale_int_ceil(delta, GST_SECOND, 90000);
  if (!f.keyframe) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
  const GstFlowReturn ret = gst_pad_push(src_, buf);  // takes ownership; returns once the packets are out
  if (ret != GST_FLOW_OK) return Status::Error(std::string("RTP sender: ") + gst_flow_get_name(ret));
  ++frames_;
  return Status::Ok();
}

Status RtpSender::AddViewer(const std::string& host, int port) {
  sockaddr_in to{};
  if (Status s = ParseEndpoint(host, port, &to); !s) return Status::Error("viewer " + s.message());
  // A 720p keyframe is ~100 packets in one burst: a large send buffer keeps it whole.
  auto sock = UdpSocket::Bind("0.0.0.0", 0, 0, 4 << 20);
  if (!sock) return sock.status();
  auto shared = std::make_shared<UdpSocket>(std::move(*sock));
  // Sent inline, on the frame's own thread: a send that would wait fails instead (counted as a
  // send error), so a congested path never holds the session.
  return fanout_->Add(
      host + ":" + std::to_string(port),
      [shared, to](const RtpFrame& f) {
        bool ok = true;
        for (const auto& p : f.packets) ok = shared->SendTo(to, p.data(), p.size(), /*dont_wait=*/true) && ok;
        return ok;
      },
      /*inline_send=*/true);
}

Status RtpSender::AddSink(const std::string& key, Fanout::Sink sink) { return fanout_->Add(key, std::move(sink)); }

bool RtpSender::RemoveSink(const std::string& key) { return fanout_->Remove(key); }

bool RtpSender::RemoveViewer(const std::string& host, int port) {
  return fanout_->Remove(host + ":" + std::to_string(port));
}

}  // namespace veil
