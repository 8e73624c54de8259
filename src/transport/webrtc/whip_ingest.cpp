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
  in->codec_ = CodecId(v->chosen.name);
  in->on_frame_ = std::move(on_frame);
  in->on_audio_ = std::move(on_audio);
  auto peer = WebRtcPeer::Create("webrtcbin name=webrtc", c);
  if (!peer) return peer.status();
  in->peer_ = std::move(*peer);
  GstElement* w = in->peer_->webrtc();
  g_signal_connect(w, "pad-added", G_CALLBACK(&WhipIngest::OnPadAdded), in.get());
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
  if (peer_) g_signal_handlers_disconnect_by_data(peer_->webrtc(), this);
  peer_.reset();
}

void WhipIngest::OnPadAdded(GstElement*, GstPad* pad, gpointer self) {
  auto* in = static_cast<WhipIngest*>(self);
  if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC) return;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  if (!caps) caps = gst_pad_query_caps(pad, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  const char* media = gst_structure_get_string(s, "media");
  const bool video = media && std::string(media) == "video";
  gst_caps_unref(caps);
  std::string desc;
  if (video) {
    if (in->linked_video_.exchange(true)) return;
    desc = in->codec_ == "vp8"
               ? "rtpvp8depay request-keyframe=true wait-for-keyframe=true"
               : "rtph264depay request-keyframe=true wait-for-keyframe=true ! h264parse config-interval=-1 ! "
                 "video/x-h264,stream-format=byte-stream,alignment=au";
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
  if (video) in->video_sink_ = sink;
  gst_object_unref(sink);
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

void WhipIngest::RequestKeyframe() {
  GstElement* sink = video_sink_.load();
  if (!sink) return;
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  if (!pad) return;
  ++key_requests_;
  gst_pad_push_event(pad, gst_video_event_new_upstream_force_key_unit(GST_CLOCK_TIME_NONE, TRUE, 0));
  gst_object_unref(pad);
}

WhipIngestStats WhipIngest::stats() const {
  WhipIngestStats s;
  s.frames = frames_;
  s.audio_packets = audio_;
  s.keyframe_requests = key_requests_;
  s.state = peer_->connection_state();
  return s;
}

}  // namespace veil
