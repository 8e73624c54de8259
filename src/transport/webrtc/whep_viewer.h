// WHEP egress: one viewer's WebRTC connection (webrtcbin, send only). The
// session encodes and packetizes each frame once (transport/rtp/rtp_sender);
// every viewer gets those RTP packets with its negotiated payload type and
// its own SSRC written in, so adding a viewer costs no encoding. A PLI or FIR
// from the viewer reaches the owner as a keyframe request.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "transport/rtp/fanout.h"
#include "transport/webrtc/webrtc_peer.h"

namespace veil {

struct WhepViewerStats {
  uint64_t audio_packets = 0, keyframe_requests = 0;  // frames and packets: the Fanout's viewer stats
  std::string state;
};

class WhepViewer {
 public:
  using OnKeyframeRequest = std::function<void()>;  // any thread
  // Answers `offer` (checked by ParseOffer with OfferRole::kView and the
  // session's codec); the answer is in *answer on success.
  static Result<std::unique_ptr<WhepViewer>> Start(const Offer& offer, const WebRtcPeerConfig& c,
                                                   OnKeyframeRequest on_keyframe, std::string* answer);
  ~WhepViewer();
  // One frame's packets (the viewer's fan-out thread). False when the pipeline refuses them.
  bool PushVideo(const RtpFrame& f);
  // One Opus RTP packet (any thread); ignored when the viewer has no audio.
  void PushAudio(const uint8_t* data, size_t size);
  std::string PollError() { return peer_->PollError(); }
  double connected_ms() const { return peer_->connected_ms(); }
  WhepViewerStats stats() const;

 private:
  WhepViewer() = default;
  static GstPadProbeReturn OnUpstreamEvent(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  bool Push(GstElement* src, const uint8_t* data, size_t size, int pt, uint32_t ssrc, GstBufferList* list);
  std::unique_ptr<WebRtcPeer> peer_;
  GstElement* vsrc_ = nullptr;  // owned by the pipeline
  GstElement* asrc_ = nullptr;  // null without audio
  int video_pt_ = -1, audio_pt_ = -1;
  uint32_t video_ssrc_ = 0, audio_ssrc_ = 0;
  OnKeyframeRequest on_keyframe_;
  bool started_ = false;  // fan-out thread only: a keyframe was sent
  double asked_ms_ = 0;   // fan-out thread only
  std::atomic<uint64_t> audio_{0}, key_requests_{0};
};

}  // namespace veil
