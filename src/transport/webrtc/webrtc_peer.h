// One WebRTC peer connection on GStreamer's webrtcbin, answering a
// non-trickle offer (WHIP / WHEP): set the remote offer, let the owner set
// up its transceivers and pads, create the answer, wait until ICE gathering
// is complete and return the answer (it carries the candidates).
// ICE is pinned to one local address (127.0.0.1 by default): UDP only, no
// TCP candidates, no UPnP (Debian's libnice would multicast SSDP otherwise),
// and the offer's candidates are filtered before they reach the agent
// (transport/webrtc/offer.h).
#pragma once
#include <gst/gst.h>
#define GST_USE_UNSTABLE_API
#include <gst/webrtc/webrtc.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "transport/gst_util.h"
#include "transport/webrtc/offer.h"

namespace veil {

struct WebRtcPeerConfig {
  std::string ice_address = "127.0.0.1";  // the one local address ICE gathers on
  int latency_ms = 40;                    // receive jitter buffers
  double timeout_ms = 5000;               // each negotiation step and ICE gathering
  int start_bitrate_kbps = 2500;          // x-google-start-bitrate in the answer (0: none)
};
Status Validate(const WebRtcPeerConfig& c);

class WebRtcPeer {
 public:
  // `description`: a gst-launch description holding "webrtcbin name=webrtc"
  // and any other elements of this peer's pipeline. The pipeline is playing
  // on return.
  static Result<std::unique_ptr<WebRtcPeer>> Create(const std::string& description, const WebRtcPeerConfig& c);
  ~WebRtcPeer();  // stops the pipeline (call from a non-streaming thread)

  // Blocks the calling (non-streaming) thread. `configure` (may be empty)
  // runs after the remote offer is applied and before the answer is created.
  Result<std::string> Answer(const Offer& offer, const std::function<Status(WebRtcPeer&)>& configure);

  GstElement* webrtc() const { return webrtc_; }
  GstElement* element(const char* name) const { return pipeline_.element(name); }  // new reference

  // "new", "connecting", "connected", "disconnected", "failed", "closed".
  std::string connection_state() const;
  // Non-empty once the connection failed or closed, or the pipeline posted an error.
  std::string PollError();
  double connected_ms() const { return connected_ms_.load(); }  // NowMs() when it connected, 0 before

 private:
  WebRtcPeer() = default;
  Status ConfigureIce();
  static void OnConnectionState(GstElement* w, GParamSpec*, gpointer self);
  static void OnGatheringState(GstElement* w, GParamSpec*, gpointer self);

  WebRtcPeerConfig cfg_;
  GstPipeline pipeline_;
  GstElement* webrtc_ = nullptr;  // owned by the pipeline
  std::mutex mu_;
  std::condition_variable cv_;
  bool gathered_ = false;  // guarded by mu_
  std::atomic<int> conn_state_{0};
  std::atomic<double> connected_ms_{0};
};

// Pays once per process what the first peer connection would otherwise pay
// on its negotiation (the DTLS certificate: 0.2-0.8 s). Call at start-up.
void WarmUpWebRtc();

// Caps (application/x-rtp) for one negotiated codec: the offer's payload
// type and fmtp parameters, NACK/PLI feedback, transport-cc when offered.
GstCaps* CodecCaps(const OfferMedia& m, uint32_t ssrc = 0);

}  // namespace veil
