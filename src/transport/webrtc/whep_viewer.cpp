#include "transport/webrtc/whep_viewer.h"

#include <gst/app/gstappsrc.h>
#include <gst/video/video-event.h>

#include "core/clock.h"

namespace veil {
namespace {

constexpr const char* kSrc = "appsrc is-live=true format=time do-timestamp=true block=false max-bytes=8000000";

uint32_t RandomSsrc() {
  uint32_t s = 0;
  while (s == 0) s = g_random_int();
  return s;
}

}  // namespace

Result<std::unique_ptr<WhepViewer>> WhepViewer::Start(const Offer& offer, const WebRtcPeerConfig& c,
                                                      OnKeyframeRequest on_keyframe, std::string* answer) {
  const OfferMedia* v = offer.video();
  if (!v || v->chosen.pt < 0) return Status::Error("the offer has no usable video");
  const OfferMedia* a = offer.audio();
  std::unique_ptr<WhepViewer> out(new WhepViewer());
  out->on_keyframe_ = std::move(on_keyframe);
  out->video_pt_ = v->chosen.pt;
  out->video_ssrc_ = RandomSsrc();
  std::string desc = std::string(kSrc) + " name=vsrc ";
  if (a) {
    out->audio_pt_ = a->chosen.pt;
    out->audio_ssrc_ = RandomSsrc();
    desc += std::string(kSrc) + " name=asrc ";
  }
  desc += "webrtcbin name=webrtc";
  auto peer = WebRtcPeer::Create(desc, c);
  if (!peer) return peer.status();
  out->peer_ = std::move(*peer);
  GstElement* w = out->peer_->webrtc();
  // A send-only transceiver per m-line, fed by an appsrc with the negotiated caps.
  auto attach = [&](const OfferMedia& m, const char* src_name, uint32_t ssrc, GstElement** keep) -> Status {
    GstElement* src = out->peer_->element(src_name);
    GstCaps* caps = CodecCaps(m, ssrc);
    g_object_set(src, "caps", caps, nullptr);
    GstPad* sink = gst_element_request_pad_simple(w, "sink_%u");
    GstPad* srcpad = gst_element_get_static_pad(src, "src");
    const bool linked = sink && gst_pad_link(srcpad, sink) == GST_PAD_LINK_OK;
    if (linked && m.kind == "video")
      gst_pad_add_probe(srcpad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, &WhepViewer::OnUpstreamEvent, out.get(), nullptr);
    GstWebRTCRTPTransceiver* t = nullptr;
    if (sink) g_object_get(sink, "transceiver", &t, nullptr);
    if (t) {
      g_object_set(t, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences", caps, nullptr);
      gst_object_unref(t);
    }
    gst_caps_unref(caps);
    gst_object_unref(srcpad);
    if (sink) gst_object_unref(sink);
    *keep = src;
    gst_object_unref(src);  // the pipeline keeps it
    if (!linked || !t) return Status::Error("cannot link the " + m.kind + " source to webrtcbin");
    return Status::Ok();
  };
  for (const OfferMedia& m : offer.media) {
    const bool video = m.kind == "video";
    if (Status s = attach(m, video ? "vsrc" : "asrc", video ? out->video_ssrc_ : out->audio_ssrc_,
                          video ? &out->vsrc_ : &out->asrc_);
        !s)
      return s;
  }
  auto ans = out->peer_->Answer(offer, nullptr);
  if (!ans) return ans.status();
  *answer = *ans;
  return out;
}

WhepViewer::~WhepViewer() { peer_.reset(); }

GstPadProbeReturn WhepViewer::OnUpstreamEvent(GstPad*, GstPadProbeInfo* info, gpointer self) {
  GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info);
  if (e && gst_video_event_is_force_key_unit(e)) {
    auto* v = static_cast<WhepViewer*>(self);
    ++v->key_requests_;
    if (v->on_keyframe_) v->on_keyframe_();
    return GST_PAD_PROBE_HANDLED;  // answered by the session's encoder, not by appsrc
  }
  return GST_PAD_PROBE_OK;
}

bool WhepViewer::Push(GstElement* src, const uint8_t* data, size_t size, int pt, uint32_t ssrc, GstBufferList* list) {
  if (size < 12 || (data[0] >> 6) != 2) return false;
  GstBuffer* b = gst_buffer_new_allocate(nullptr, size, nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  memcpy(map.data, data, size);
  map.data[1] = uint8_t((map.data[1] & 0x80) | (pt & 0x7f));
  map.data[8] = uint8_t(ssrc >> 24);
  map.data[9] = uint8_t(ssrc >> 16);
  map.data[10] = uint8_t(ssrc >> 8);
  map.data[11] = uint8_t(ssrc);
  gst_buffer_unmap(b, &map);
  if (list) {
    gst_buffer_list_add(list, b);
    return true;
  }
  return gst_app_src_push_buffer(GST_APP_SRC(src), b) == GST_FLOW_OK;
}

bool WhepViewer::PushVideo(const RtpFrame& f) {
  if (f.packets.empty() || peer_->connected_ms() == 0) return true;  // nothing reaches an unconnected peer
  if (!started_) {  // the first frame it gets must be a keyframe: ask for one (again every 500 ms)
    if (!f.keyframe) {
      const double now = NowMs();
      if (now - asked_ms_ > 500) {
        asked_ms_ = now;
        if (on_keyframe_) on_keyframe_();
      }
      return true;
    }
    started_ = true;
  }
  GstBufferList* list = gst_buffer_list_new_sized(guint(f.packets.size()));
  for (const auto& p : f.packets) Push(vsrc_, p.data(), p.size(), video_pt_, video_ssrc_, list);
  return gst_app_src_push_buffer_list(GST_APP_SRC(vsrc_), list) == GST_FLOW_OK;
}

void WhepViewer::PushAudio(const uint8_t* data, size_t size) {
  if (!asrc_) return;
  if (Push(asrc_, data, size, audio_pt_, audio_ssrc_, nullptr)) ++audio_;
}

WhepViewerStats WhepViewer::stats() const {
  WhepViewerStats s;
  s.audio_packets = audio_;
  s.keyframe_requests = key_requests_;
  s.state = peer_->connection_state();
  return s;
}

}  // namespace veil
