#include "transport/rtp/rtp_receiver.h"

#include <gst/app/gstappsink.h>
#include <gst/rtp/gstrtpbuffer.h>

#include "core/clock.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <mutex>

namespace veil {

Status Validate(const RtpReceiverConfig& c) {
  if (c.port < 0 || c.port > 65535) return Status::Error("RTP port must be in [0, 65535]");
  if (c.payload_type < 96 || c.payload_type > 127) return Status::Error("RTP payload type must be dynamic (96-127)");
  if (c.latency_ms < 0 || c.latency_ms > 2000) return Status::Error("jitter buffer latency must be in [0, 2000] ms");
  if (c.socket_buffer_bytes < 0 || c.socket_buffer_bytes > (256 << 20))
    return Status::Error("socket buffer must be in [0, 256 MiB]");
  for (char ch : c.address)
    if (!(isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == ':' || isxdigit(static_cast<unsigned char>(ch))))
      return Status::Error("RTP bind address must be a numeric IP, got '" + c.address + "'");
  return Status::Ok();
}

Result<std::unique_ptr<RtpReceiver>> RtpReceiver::Start(const RtpReceiverConfig& c, OnFrame on_frame) {
  if (Status s = Validate(c); !s) return s;
  const VideoCodecInfo& vc = Info(c.codec);
  const std::string desc =
      // reuse=false: udpsrc sets SO_REUSEADDR by default, and Linux then hands a socket asking for
      // port 0 a port another SO_REUSEADDR socket holds (165 duplicates in 3000 such binds here):
      // two sessions, or a session and a viewer, would share one port and each other's packets.
      "udpsrc name=src reuse=false buffer-size=" + std::to_string(c.socket_buffer_bytes) + " address=" + c.address +
      " port=" + std::to_string(c.port) + " caps=\"application/x-rtp,media=video,clock-rate=" +
      std::to_string(vc.clock_rate) + ",encoding-name=" + vc.sdp_name + ",payload=" + std::to_string(c.payload_type) +
      // drop-on-latency=false: with it, the jitter buffer threw its oldest packets away whenever
      // what it held spanned its latency in RTP time, which a bunch of frames arriving together
      // does (a network that stalls and then delivers, while this thread is briefly busy): the
      // frames were lost silently (not counted as lost, no sequence gap) and a keyframe's loss
      // cost the stream until the next one (rtp_test BunchedFramesWhileTheConsumerIsBusy...).
      // What the buffer holds is bounded by its consumer, which never waits: the session's
      // hand-over to the executor (a bounded, counted queue) or one decode. webrtcbin's jitter
      // buffers (WHIP ingest) run the same way.
      "\" ! rtpjitterbuffer name=jb latency=" + std::to_string(c.latency_ms) +
      " mode=none drop-on-latency=false faststart-min-packets=2 ! " + vc.depayloader + " name=depay ! " +
      vc.stream_caps + " ! appsink name=sink sync=false async=false max-buffers=16 drop=true";
  auto p = GstPipeline::Parse(desc);
  if (!p) return p.status();
  std::unique_ptr<RtpReceiver> r(new RtpReceiver());
  r->pipeline_ = std::move(*p);
  r->on_frame_ = std::move(on_frame);
  r->admission_ = std::make_unique<RtpAdmission>(c.payload_type);
  r->jitterbuffer_ = r->pipeline_.element("jb");
  GstElement* sink = r->pipeline_.element("sink");
  GstAppSinkCallbacks cb{};
  cb.new_sample = [](GstAppSink* s, gpointer self) { return OnSample(GST_ELEMENT(s), self); };
  gst_app_sink_set_callbacks(GST_APP_SINK(sink), &cb, r.get(), nullptr);
  gst_object_unref(sink);
  GstElement* depay = r->pipeline_.element("depay");
  GstPad* pad = gst_element_get_static_pad(depay, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, &RtpReceiver::OnRtp, r.get(), nullptr);
  gst_object_unref(pad);
  gst_object_unref(depay);
  GstElement* udpsrc = r->pipeline_.element("src");
  pad = gst_element_get_static_pad(udpsrc, "src");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, &RtpReceiver::OnArrival, r.get(), nullptr);
  gst_object_unref(pad);
  gst_object_unref(udpsrc);
  // The socket's reader must be running before Start returns: a keyframe
  // burst sent at once would otherwise overflow the socket buffer
  // (net.core.rmem_max) before anyone reads it. udpsrc's streaming thread
  // announces itself with stream-start, right before its first read.
  auto started = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  GstElement* src0 = r->pipeline_.element("src");
  GstPad* srcpad = gst_element_get_static_pad(src0, "src");
  struct Ctx {
    std::shared_ptr<std::promise<void>> p;
    std::shared_ptr<std::once_flag> o;
  };
  gst_pad_add_probe(
      srcpad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      [](GstPad*, GstPadProbeInfo* info, gpointer data) {
        auto* c = static_cast<Ctx*>(data);
        if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) != GST_EVENT_STREAM_START) return GST_PAD_PROBE_OK;
        std::call_once(*c->o, [&] { c->p->set_value(); });
        return GST_PAD_PROBE_REMOVE;
      },
      new Ctx{started, once}, [](gpointer d) { delete static_cast<Ctx*>(d); });
  gst_object_unref(srcpad);
  gst_object_unref(src0);
  if (Status s = r->pipeline_.Play(); !s) return s;
  if (started->get_future().wait_for(std::chrono::seconds(2)) != std::future_status::ready)
    return Status::Error("RTP receiver: the socket reader did not start");
  GstElement* src = r->pipeline_.element("src");
  g_object_get(src, "port", &r->port_, nullptr);  // the bound port when 0 was asked for
  gst_object_unref(src);
  if (r->port_ <= 0) return Status::Error("RTP receiver: could not bind a UDP port on " + c.address);
  return r;
}

RtpReceiver::~RtpReceiver() {
  pipeline_.Stop();
  if (jitterbuffer_) gst_object_unref(jitterbuffer_);
}

GstPadProbeReturn RtpReceiver::OnRtp(GstPad*, GstPadProbeInfo* info, gpointer self) {
  auto* r = static_cast<RtpReceiver*>(self);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  if (buf && gst_rtp_buffer_map(buf, GST_MAP_READ, &rtp)) {
    const uint32_t ts = gst_rtp_buffer_get_timestamp(&rtp);
    gst_rtp_buffer_unmap(&rtp);
    MutexLock lk(r->ts_mu_);
    TsEntry& last = r->ts_ring_[(r->ts_next_ + 63) % 64];
    if (last.pts != GST_BUFFER_PTS(buf)) {
      r->ts_ring_[r->ts_next_] = {GST_BUFFER_PTS(buf), ts};
      r->ts_next_ = (r->ts_next_ + 1) % 64;
    }
  }
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn RtpReceiver::OnArrival(GstPad*, GstPadProbeInfo* info, gpointer self) {
  auto* r = static_cast<RtpReceiver*>(self);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  if (!buf || !gst_rtp_buffer_map(buf, GST_MAP_READ, &rtp)) {
    ++r->not_rtp_;
    return GST_PAD_PROBE_DROP;
  }
  const uint32_t ts = gst_rtp_buffer_get_timestamp(&rtp);
  const uint32_t ssrc = gst_rtp_buffer_get_ssrc(&rtp);
  const int pt = gst_rtp_buffer_get_payload_type(&rtp);
  const uint16_t seq = gst_rtp_buffer_get_seq(&rtp);
  gst_rtp_buffer_unmap(&rtp);
  const double now = NowMs();
  const RtpAdmission::Verdict v = r->admission_->Admit(pt, ssrc, seq, ts, now);
  if (!v.pass) return GST_PAD_PROBE_DROP;
  if (v.rewritten) {  // after a same-SSRC restart: the jitter buffer sees one stream
    buf = gst_buffer_make_writable(buf);
    GST_PAD_PROBE_INFO_DATA(info) = buf;
    GstRTPBuffer w = GST_RTP_BUFFER_INIT;
    if (gst_rtp_buffer_map(buf, GST_MAP_WRITE, &w)) {
      gst_rtp_buffer_set_seq(&w, v.seq);
      gst_rtp_buffer_set_timestamp(&w, v.ts);
      gst_rtp_buffer_unmap(&w);
    }
  }
  const uint32_t out_ts = v.ts;
  {
    MutexLock lk(r->ts_mu_);
    // A frame's packets arrive together: only a new timestamp starts an entry.
    const ArrivalEntry& newest = r->arrival_ring_[(r->arrival_next_ + 63) % 64];
    if (newest.rtp == out_ts && newest.ms > 0) return GST_PAD_PROBE_OK;
    r->arrival_ring_[r->arrival_next_] = {out_ts, now};
    r->arrival_next_ = (r->arrival_next_ + 1) % 64;
  }
  return GST_PAD_PROBE_OK;
}

GstFlowReturn RtpReceiver::OnSample(GstElement* sink, gpointer self) {
  auto* r = static_cast<RtpReceiver*>(self);
  GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  if (!sample) return GST_FLOW_OK;
  GstBuffer* buf = gst_sample_get_buffer(sample);
  GstMapInfo map;
  if (buf && gst_buffer_map(buf, &map, GST_MAP_READ)) {
    EncodedFrame f;
    f.data.assign(map.data, map.data + map.size);
    f.keyframe = !GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
    f.pts = GST_BUFFER_PTS_IS_VALID(buf) ? int64_t(GST_BUFFER_PTS(buf)) : -1;
    gst_buffer_unmap(buf, &map);
    uint32_t rtp_ts = 0;
    {
      // Newest entry first: an older one may carry the same PTS (garbage or a previous
      // stream before it, whose timestamps the jitter buffer mapped to the same times), and
      // taking it gave the frame a stranger's RTP timestamp (server_test GarbageRtpHurtsNoSession
      // failed about one run in two that way).
      MutexLock lk(r->ts_mu_);
      for (size_t k = 1; k <= 64; ++k) {
        const TsEntry& e = r->ts_ring_[(r->ts_next_ + 64 - k) % 64];
        if (e.pts == GST_BUFFER_PTS(buf)) {
          rtp_ts = e.rtp;
          break;
        }
      }
      for (size_t k = 1; k <= 64; ++k) {
        const ArrivalEntry& e = r->arrival_ring_[(r->arrival_next_ + 64 - k) % 64];
        if (e.rtp == rtp_ts && e.ms > 0) {
          f.arrival_ms = e.ms;
          break;
        }
      }
    }
    ++r->frames_;
    if (r->on_frame_) r->on_frame_(std::move(f), rtp_ts);
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

RtpReceiverStats RtpReceiver::stats() const {
  RtpReceiverStats s;
  s.frames = frames_.load();
  s.foreign = not_rtp_.load() + admission_->foreign();
  s.ssrc_changes = admission_->ssrc_changes();
  s.restarts = admission_->restarts();
  if (!jitterbuffer_) return s;
  const JitterBufferCounters c = ReadJitterBuffer(jitterbuffer_);
  s.packets = c.packets;
  s.lost = c.lost;
  s.late = c.late;
  s.jitter_ms = c.jitter_ms;
  return s;
}

}  // namespace veil
