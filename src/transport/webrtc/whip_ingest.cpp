#include "transport/webrtc/whip_ingest.h"

#include <gst/app/gstappsink.h>
#include <gst/video/video-event.h>

#include "core/clock.h"

namespace veil {

Result<std::unique_ptr<WhipIngest>> WhipIngest::Start(const Offer& offer, const WebRtcPeerConfig& c, OnFrame on_frame,
                                                      OnAudio on_audio, std::string* answer) {
  const OfferMedia* v = offer.video();
  if (!v || v->chosen.pt < 0) return Status::Error("the offer has no usable video");
  std::unique_ptr<WhipIngest> in(new WhipIngest());
  in->codec_ = v->video_codec;
  in->on_frame_ = std::move(on_frame);
  in->on_audio_ = std::move(on_audio);
  auto peer = WebRtcPeer::Create("webrtcbin name=webrtc", c);
  if (!peer) return peer.status();
  in->peer_ = std::move(*peer);
  GstElement* w = in->peer_->webrtc();
  g_signal_connect(w, "pad-added", G_CALLBACK(&WhipIngest::OnPadAdded), in.get());
  if (GstElement* rtpbin = gst_bin_get_by_name(GST_BIN(w), "rtpbin")) {
    g_signal_connect(rtpbin, "new-jitterbuffer", G_CALLBACK(&WhipIngest::OnNewJitterBuffer), in.get());
    gst_object_unref(rtpbin);
  }
  // One receive-only transceiver per offered m-line, restricted to the chosen codec.
  for (const OfferMedia& m : offer.media) {
    GstCaps* caps = CodecCaps(m);
    GstWebRTCRTPTransceiver* t = nullptr;
    g_signal_emit_by_name(w, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &t);
    gst_caps_unref(caps);
    if (!t) return Status::Error("cannot add a " + m.kind + " transceiver");
    if (m.kind == "video" && m.nack) g_object_set(t, "do-nack", TRUE, nullptr);
    gst_object_unref(t);
  }
  auto a = in->peer_->Answer(offer, nullptr);
  if (!a) return a.status();
  *answer = *a;
  return in;
}

WhipIngest::~WhipIngest() {
  if (peer_) {
    g_signal_handlers_disconnect_by_data(peer_->webrtc(), this);
    if (GstElement* rtpbin = gst_bin_get_by_name(GST_BIN(peer_->webrtc()), "rtpbin")) {
      g_signal_handlers_disconnect_by_data(rtpbin, this);
      gst_object_unref(rtpbin);
    }
  }
  peer_.reset();
  MutexLock lk(jb_mu_);
  for (auto& [ssrc, jb] : jitterbuffers_) gst_object_unref(jb);
  jitterbuffers_.clear();
}

void WhipIngest::OnNewJitterBuffer(GstElement*, GstElement* jitterbuffer, guint, guint ssrc, gpointer self) {
  auto* in = static_cast<WhipIngest*>(self);
  MutexLock lk(in->jb_mu_);
  if (in->jitterbuffers_.size() >= kMaxJitterBuffers) {
    gst_object_unref(in->jitterbuffers_.front().second);
    in->jitterbuffers_.erase(in->jitterbuffers_.begin());
  }
  in->jitterbuffers_.emplace_back(uint32_t(ssrc), GST_ELEMENT(gst_object_ref(jitterbuffer)));
}

void WhipIngest::OnPadAdded(GstElement*, GstPad* pad, gpointer self) {
  auto* in = static_cast<WhipIngest*>(self);
  if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC) return;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  if (!caps) caps = gst_pad_query_caps(pad, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  const char* media = gst_structure_get_string(s, "media");
  const bool video = media && std::string(media) == "video";
  guint ssrc = 0;
  gint pt = -1;
  const bool addressed = gst_structure_get_uint(s, "ssrc", &ssrc) && gst_structure_get_int(s, "payload", &pt);
  gst_caps_unref(caps);
  std::string desc;
  if (video) {
    if (in->linked_video_.exchange(true)) return;
    if (addressed) {
      in->video_ssrc_ = ssrc;
      in->video_pt_ = pt;
    }
    const VideoCodecInfo& vc = Info(in->codec_);
    desc = std::string(vc.depayloader) + " name=depay request-keyframe=true wait-for-keyframe=true";
    if (*vc.depay_finish) desc += std::string(" ! ") + vc.depay_finish;
    desc += " ! appsink name=vsink emit-signals=true sync=false max-buffers=64 drop=false";
  } else {
    desc = "appsink name=asink emit-signals=true sync=false max-buffers=256 drop=true";
  }
  GError* err = nullptr;
  GstElement* bin = gst_parse_bin_from_description(desc.c_str(), TRUE, &err);
  if (err) {
    g_error_free(err);
    if (bin) gst_object_unref(bin);
    return;  // the missing branch shows as no frames; the pipeline stays up
  }
  GstElement* pipeline = GST_ELEMENT(gst_element_get_parent(in->peer_->webrtc()));
  gst_bin_add(GST_BIN(pipeline), bin);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(bin), video ? "vsink" : "asink");
  g_signal_connect(sink, "new-sample", G_CALLBACK(video ? &WhipIngest::OnVideoSample : &WhipIngest::OnAudioSample), in);
  gst_object_unref(sink);
  if (video) {
    // After a loss the depayloader drops frames until a keyframe and asks for one with an
    // upstream event; in webrtcbin (GStreamer 1.22) that event never became a PLI (Chromium
    // counted 0 PLIs under 5% loss in tests/web/whip_client.test.mjs). It is taken here and
    // sent the way RequestKeyframe sends it.
    GstElement* depay = gst_bin_get_by_name(GST_BIN(bin), "depay");
    GstPad* dpad = gst_element_get_static_pad(depay, "sink");
    gst_pad_add_probe(dpad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, &WhipIngest::OnDepayUpstream, in, nullptr);
    gst_object_unref(dpad);
    gst_object_unref(depay);
  }
  gst_element_sync_state_with_parent(bin);
  GstPad* sinkpad = gst_element_get_static_pad(bin, "sink");
  gst_pad_link(pad, sinkpad);
  gst_object_unref(sinkpad);
  gst_object_unref(pipeline);
}

namespace {
// Pulls the sink's sample and calls f(buffer, mapped bytes) while it is mapped.
template <typename F>
GstFlowReturn WithSample(GstElement* sink, F f) {
  GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  if (!sample) return GST_FLOW_OK;
  GstBuffer* b = gst_sample_get_buffer(sample);
  GstMapInfo map;
  if (b && gst_buffer_map(b, &map, GST_MAP_READ)) {
    f(b, map);
    gst_buffer_unmap(b, &map);
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}
}  // namespace

GstFlowReturn WhipIngest::OnVideoSample(GstElement* sink, gpointer self) {
  auto* in = static_cast<WhipIngest*>(self);
  return WithSample(sink, [in](GstBuffer* b, const GstMapInfo& map) {
    EncodedFrame f;
    f.data.assign(map.data, map.data + map.size);
    f.keyframe = !GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DELTA_UNIT);
    f.arrival_ms = NowMs();
    // 90 kHz clock from the running time: monotonic, unique per frame.
    const GstClockTime pts = GST_BUFFER_PTS(b);
    const uint32_t ts = GST_CLOCK_TIME_IS_VALID(pts) ? uint32_t(gst_util_uint64_scale(pts, 90000, GST_SECOND))
                                                     : uint32_t(NowMs() * 90.0);
    f.pts = ts;
    ++in->frames_;
    if (in->on_frame_) in->on_frame_(std::move(f), ts);
  });
}

GstFlowReturn WhipIngest::OnAudioSample(GstElement* sink, gpointer self) {
  auto* in = static_cast<WhipIngest*>(self);
  return WithSample(sink, [in](GstBuffer*, const GstMapInfo& map) {
    ++in->audio_;
    if (in->on_audio_) in->on_audio_(map.data, map.size);
  });
}

GstPadProbeReturn WhipIngest::OnDepayUpstream(GstPad*, GstPadProbeInfo* info, gpointer self) {
  GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info);
  if (!e || !gst_video_event_is_force_key_unit(e)) return GST_PAD_PROBE_OK;
  static_cast<WhipIngest*>(self)->RequestKeyframe();
  return GST_PAD_PROBE_DROP;
}

void WhipIngest::RequestKeyframe() {
  ++key_requests_;
  const double now = NowMs();
  double last = last_pli_ms_.load();
  if (now - last < 250 || !last_pli_ms_.compare_exchange_strong(last, now)) return;
  const uint32_t ssrc = video_ssrc_.load();
  const int pt = video_pt_.load();
  if (ssrc == 0 || pt < 0 || !peer_) return;
  // The RTP session turns a GstForceKeyUnit event that names the sender's SSRC and payload
  // type into RTCP PLI (all-headers FALSE: PLI, not FIR). Sent straight to its receive pad:
  // the event from downstream lacks those fields in webrtcbin. With max-bundle every m-line is
  // session 0.
  GstElement* rtpbin = gst_bin_get_by_name(GST_BIN(peer_->webrtc()), "rtpbin");
  if (!rtpbin) return;
  GstElement* session = nullptr;
  g_signal_emit_by_name(rtpbin, "get-session", 0u, &session);
  gst_object_unref(rtpbin);
  if (!session) return;
  GstPad* pad = gst_element_get_static_pad(session, "recv_rtp_src");
  gst_object_unref(session);
  if (!pad) return;
  GstStructure* s = gst_structure_new("GstForceKeyUnit", "all-headers", G_TYPE_BOOLEAN, FALSE, "ssrc", G_TYPE_UINT,
                                      guint(ssrc), "payload", G_TYPE_UINT, guint(pt), nullptr);
  if (gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, s))) ++plis_;
  gst_object_unref(pad);
}

WhipIngestStats WhipIngest::stats() const {
  WhipIngestStats s;
  s.frames = frames_;
  s.audio_packets = audio_;
  s.keyframe_requests = key_requests_;
  s.plis = plis_;
  s.state = peer_->connection_state();
  GstElement* jb = nullptr;
  {
    MutexLock lk(jb_mu_);
    for (auto& [ssrc, e] : jitterbuffers_)
      if (ssrc == video_ssrc_.load()) jb = GST_ELEMENT(gst_object_ref(e));
  }
  if (!jb) return s;
  s.jitter_buffer = ReadJitterBuffer(jb);
  gst_object_unref(jb);
  return s;
}

}  // namespace veil
