#include "transport/webrtc/webrtc_peer.h"

#include <algorithm>
#include <cctype>

#include <agent.h>
#include <gst/sdp/sdp.h>

#include "core/clock.h"

namespace veil {
namespace {

constexpr const char* kTwccUri = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";

struct PromiseWaiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

const char* StateName(int s) {
  switch (s) {
    case GST_WEBRTC_PEER_CONNECTION_STATE_NEW: return "new";
    case GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTING: return "connecting";
    case GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED: return "connected";
    case GST_WEBRTC_PEER_CONNECTION_STATE_DISCONNECTED: return "disconnected";
    case GST_WEBRTC_PEER_CONNECTION_STATE_FAILED: return "failed";
    case GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED: return "closed";
    default: return "unknown";
  }
}

}  // namespace

Status Validate(const WebRtcPeerConfig& c) {
  NiceAddress a;
  nice_address_init(&a);
  if (!nice_address_set_from_string(&a, c.ice_address.c_str()))
    return Status::Error("ICE address must be a numeric IP address, got '" + c.ice_address + "'");
  if (c.latency_ms < 0 || c.latency_ms > 2000) return Status::Error("WebRTC jitter buffer latency must be 0..2000 ms");
  if (!(c.timeout_ms >= 100 && c.timeout_ms <= 60000)) return Status::Error("WebRTC negotiation timeout must be 100..60000 ms");
  if (c.start_bitrate_kbps < 0 || c.start_bitrate_kbps > 50000) return Status::Error("start bitrate must be 0..50000 kbit/s");
  return Status::Ok();
}

void WarmUpWebRtc() {
  EnsureGstInit();
  // dtlsdec generates the process's default DTLS certificate when it is made.
  if (GstElement* e = gst_element_factory_make("dtlssrtpdec", nullptr)) gst_object_unref(e);
}

namespace {
// An fmtp parameter may add to the caps, never replace what they are built from (payload type,
// clock rate, SSRC, the feedback and extension fields), and its name must be a valid caps field.
bool FmtpKeyAllowed(const std::string& k) {
  static const char* kReserved[] = {"media", "encoding-name", "encoding-params", "clock-rate", "payload", "ssrc",
                                    "timestamp-offset", "seqnum-offset", "seqnum-base", "clock-base", "npt-start",
                                    "npt-stop", "play-speed", "play-scale"};
  if (k.empty() || k.size() > 64 || !std::isalpha(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  if (k.rfind("rtcp-fb-", 0) == 0 || k.rfind("extmap-", 0) == 0) return false;
  return std::none_of(std::begin(kReserved), std::end(kReserved), [&](const char* r) { return k == r; });
}
}  // namespace

GstCaps* CodecCaps(const OfferMedia& m, uint32_t ssrc) {
  const OfferCodec& c = m.chosen;
  GstCaps* caps = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, m.kind.c_str(), "encoding-name",
                                      G_TYPE_STRING, c.name.c_str(), "clock-rate", G_TYPE_INT, c.clock_rate, "payload",
                                      G_TYPE_INT, c.pt, nullptr);
  GstStructure* s = gst_caps_get_structure(caps, 0);
  if (c.name == "OPUS") gst_structure_set(s, "encoding-params", G_TYPE_STRING, "2", nullptr);
  // fmtp parameters as strings, as webrtcbin reads them from an SDP.
  std::string f = c.fmtp;
  size_t pos = 0;
  while (pos < f.size()) {
    size_t end = f.find(';', pos);
    if (end == std::string::npos) end = f.size();
    std::string kv = f.substr(pos, end - pos);
    kv.erase(0, kv.find_first_not_of(' '));
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && FmtpKeyAllowed(kv.substr(0, eq)))
      gst_structure_set(s, kv.substr(0, eq).c_str(), G_TYPE_STRING, kv.substr(eq + 1).c_str(), nullptr);
    pos = end + 1;
  }
  if (m.kind == "video") {
    if (m.nack) gst_structure_set(s, "rtcp-fb-nack", G_TYPE_BOOLEAN, TRUE, nullptr);
    gst_structure_set(s, "rtcp-fb-nack-pli", G_TYPE_BOOLEAN, TRUE, nullptr);
  }
  if (m.transport_cc && m.twcc_ext > 0) {
    gst_structure_set(s, "rtcp-fb-transport-cc", G_TYPE_BOOLEAN, TRUE, nullptr);
    gst_structure_set(s, ("extmap-" + std::to_string(m.twcc_ext)).c_str(), G_TYPE_STRING, kTwccUri, nullptr);
  }
  if (ssrc != 0) gst_structure_set(s, "ssrc", G_TYPE_UINT, ssrc, nullptr);
  return caps;
}

Result<std::unique_ptr<WebRtcPeer>> WebRtcPeer::Create(const std::string& description, const WebRtcPeerConfig& c) {
  if (Status s = Validate(c); !s) return s;
  auto p = GstPipeline::Parse(description);
  if (!p) return p.status();
  std::unique_ptr<WebRtcPeer> peer(new WebRtcPeer());
  peer->cfg_ = c;
  peer->pipeline_ = std::move(*p);
  GstElement* w = peer->pipeline_.element("webrtc");
  if (!w) return Status::Error("WebRTC pipeline has no webrtcbin named 'webrtc'");
  peer->webrtc_ = w;
  gst_object_unref(w);  // the pipeline keeps it
  g_object_set(w, "latency", guint(c.latency_ms), "bundle-policy", GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE, nullptr);
  if (Status s = peer->ConfigureIce(); !s) return s;
  g_signal_connect(w, "notify::connection-state", G_CALLBACK(&WebRtcPeer::OnConnectionState), peer.get());
  g_signal_connect(w, "notify::ice-gathering-state", G_CALLBACK(&WebRtcPeer::OnGatheringState), peer.get());
  if (Status s = peer->pipeline_.Play(); !s) return s;
  return peer;
}

Status WebRtcPeer::ConfigureIce() {
  GstObject* ice = nullptr;
  g_object_get(webrtc_, "ice-agent", &ice, nullptr);
  if (!ice) return Status::Error("webrtcbin has no ICE agent");
  g_object_set(ice, "ice-tcp", FALSE, "ice-udp", TRUE, nullptr);
  GObject* agent = nullptr;
  g_object_get(ice, "agent", &agent, nullptr);
  gst_object_unref(ice);
  if (!agent) return Status::Error("the ICE agent is not libnice");
  g_object_set(agent, "upnp", FALSE, nullptr);
  NiceAddress a;
  nice_address_init(&a);
  nice_address_set_from_string(&a, cfg_.ice_address.c_str());
  const bool ok = nice_agent_add_local_address(NICE_AGENT(agent), &a);
  g_object_unref(agent);
  if (!ok) return Status::Error("cannot pin ICE to " + cfg_.ice_address);
  return Status::Ok();
}

WebRtcPeer::~WebRtcPeer() {
  if (webrtc_) {
    g_signal_handlers_disconnect_by_data(webrtc_, this);
  }
  pipeline_.Stop();
}

void WebRtcPeer::OnConnectionState(GstElement* w, GParamSpec*, gpointer self) {
  auto* p = static_cast<WebRtcPeer*>(self);
  GstWebRTCPeerConnectionState s{};
  g_object_get(w, "connection-state", &s, nullptr);
  p->conn_state_ = int(s);
  if (s == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED && p->connected_ms_.load() == 0) p->connected_ms_ = NowMs();
}

void WebRtcPeer::OnGatheringState(GstElement* w, GParamSpec*, gpointer self) {
  auto* p = static_cast<WebRtcPeer*>(self);
  GstWebRTCICEGatheringState s{};
  g_object_get(w, "ice-gathering-state", &s, nullptr);
  if (s == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) {
    std::lock_guard lk(p->mu_);
    p->gathered_ = true;
    p->cv_.notify_all();
  }
}

std::string WebRtcPeer::connection_state() const { return StateName(conn_state_.load()); }

std::string WebRtcPeer::PollError() {
  if (std::string e = pipeline_.PollError(); !e.empty()) return e;
  const int s = conn_state_.load();
  if (s == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED) return "WebRTC connection failed";
  if (s == GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED) return "WebRTC connection closed by the peer";
  return "";
}

Result<std::string> WebRtcPeer::Answer(const Offer& offer, const std::function<Status(WebRtcPeer&)>& configure) {
  // One step: emit `signal` with a promise and wait for its reply (bounded).
  auto step = [this](const char* what, auto emit) -> Result<const GstStructure*> {
    auto* waiter = new PromiseWaiter();
    auto shared = std::shared_ptr<PromiseWaiter>(waiter);
    auto* hold = new std::shared_ptr<PromiseWaiter>(shared);
    GstPromise* p = gst_promise_new_with_change_func(
        [](GstPromise*, gpointer d) {
          auto& w = **static_cast<std::shared_ptr<PromiseWaiter>*>(d);
          std::lock_guard lk(w.mu);
          w.done = true;
          w.cv.notify_all();
        },
        hold, [](gpointer d) { delete static_cast<std::shared_ptr<PromiseWaiter>*>(d); });
    emit(p);
    {
      std::unique_lock lk(shared->mu);
      if (!shared->cv.wait_for(lk, std::chrono::milliseconds(int64_t(cfg_.timeout_ms)), [&] { return shared->done; })) {
        lk.unlock();
        gst_promise_interrupt(p);
        gst_promise_unref(p);
        return Status::Error(std::string(what) + ": timed out");
      }
    }
    const GstPromiseResult r = gst_promise_wait(p);
    const GstStructure* reply = r == GST_PROMISE_RESULT_REPLIED ? gst_promise_get_reply(p) : nullptr;
    std::string err;
    if (r != GST_PROMISE_RESULT_REPLIED) err = "no reply";
    else if (reply && gst_structure_has_field(reply, "error")) {
      GError* e = nullptr;
      gst_structure_get(reply, "error", G_TYPE_ERROR, &e, nullptr);
      err = e ? e->message : "error";
      if (e) g_error_free(e);
    }
    // Keep the reply alive with the promise: the caller copies what it needs first.
    g_object_set_data_full(G_OBJECT(webrtc_), "veil-last-promise", p, [](gpointer q) { gst_promise_unref(static_cast<GstPromise*>(q)); });
    if (!err.empty()) return Status::Error(std::string(what) + ": " + err);
    return reply;
  };

  GstSDPMessage* sdp = nullptr;
  if (gst_sdp_message_new_from_text(offer.sdp.c_str(), &sdp) != GST_SDP_OK || !sdp)
    return Status::Error("the offer is not valid SDP");
  GstWebRTCSessionDescription* remote = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);
  auto r1 = step("set remote description", [&](GstPromise* p) {
    g_signal_emit_by_name(webrtc_, "set-remote-description", remote, p);
  });
  gst_webrtc_session_description_free(remote);
  if (!r1) return r1.status();
  if (configure)
    if (Status s = configure(*this); !s) return s;
  GstWebRTCSessionDescription* answer = nullptr;
  auto r2 = step("create answer", [&](GstPromise* p) { g_signal_emit_by_name(webrtc_, "create-answer", nullptr, p); });
  if (!r2) return r2.status();
  if (*r2) gst_structure_get(*r2, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &answer, nullptr);
  if (!answer) return Status::Error("create answer: webrtcbin gave no answer");
  auto r3 = step("set local description", [&](GstPromise* p) {
    g_signal_emit_by_name(webrtc_, "set-local-description", answer, p);
  });
  gst_webrtc_session_description_free(answer);
  if (!r3) return r3.status();
  {
    std::unique_lock lk(mu_);
    if (!cv_.wait_for(lk, std::chrono::milliseconds(int64_t(cfg_.timeout_ms)), [&] { return gathered_; }))
      return Status::Error("ICE gathering did not complete in " + std::to_string(int(cfg_.timeout_ms)) + " ms");
  }
  GstWebRTCSessionDescription* local = nullptr;
  g_object_get(webrtc_, "local-description", &local, nullptr);
  if (!local) return Status::Error("webrtcbin has no local description");
  gchar* text = gst_sdp_message_as_text(local->sdp);
  std::string out = text ? text : "";
  g_free(text);
  gst_webrtc_session_description_free(local);
  const OfferMedia* v = offer.video();
  if (cfg_.start_bitrate_kbps > 0 && v) out = WithStartBitrate(out, v->chosen.pt, cfg_.start_bitrate_kbps);
  return out;
}

}  // namespace veil
