// WHIP ingest: one publisher's WebRTC connection (webrtcbin, receive only).
// Video is depayloaded into compressed frames for the session (decoding
// stays in src/media, as for plain RTP); Opus audio leaves as RTP packets,
// untouched, for the session's audio fan-out.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "media/codec.h"
#include "transport/webrtc/webrtc_peer.h"

namespace veil {

struct WhipIngestStats {
  // keyframe_requests: asked for (veil's decoder, or the depayloader after a loss);
  // plis: of those, handed to the RTP session as RTCP PLI (at most one per 250 ms).
  uint64_t frames = 0, audio_packets = 0, keyframe_requests = 0, plis = 0;
  JitterBufferCounters jitter_buffer;  // the video's (zeros until its jitter buffer exists)
  std::string state;  // connection state
};

class WhipIngest {
 public:
  // Called on a streaming thread: a complete compressed frame, its RTP-clock
  // timestamp (90 kHz, from the buffer's running time) and arrival_ms set.
  using OnFrame = std::function<void(EncodedFrame&& frame, uint32_t rtp_timestamp)>;
  // Called on a streaming thread for every Opus RTP packet.
  using OnAudio = std::function<void(const uint8_t* data, size_t size)>;
  // Answers `offer` (already checked by ParseOffer with OfferRole::kPublish);
  // the answer is in *answer on success.
  static Result<std::unique_ptr<WhipIngest>> Start(const Offer& offer, const WebRtcPeerConfig& c, OnFrame on_frame,
                                                   OnAudio on_audio, std::string* answer);
  ~WhipIngest();
  // Asks the publisher for a keyframe (RTCP PLI), e.g. after a decode error or a lost packet.
  // Any thread; requests closer than 250 ms apart make one PLI.
  void RequestKeyframe();
  std::string PollError() { return peer_->PollError(); }
  WhipIngestStats stats() const;

 private:
  WhipIngest() = default;
  static void OnPadAdded(GstElement* webrtc, GstPad* pad, gpointer self);
  static GstFlowReturn OnVideoSample(GstElement* sink, gpointer self);
  static GstFlowReturn OnAudioSample(GstElement* sink, gpointer self);
  static GstPadProbeReturn OnDepayUpstream(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  static void OnNewJitterBuffer(GstElement* rtpbin, GstElement* jitterbuffer, guint session, guint ssrc, gpointer self);
  std::unique_ptr<WebRtcPeer> peer_;
  VideoCodec codec_ = VideoCodec::kVp8;  // picks the depayloader
  OnFrame on_frame_;
  OnAudio on_audio_;
  std::atomic<uint64_t> frames_{0}, audio_{0}, key_requests_{0}, plis_{0};
  std::atomic<double> last_pli_ms_{0};
  // The publisher's video SSRC and payload type (from the pad's caps), which the RTP session
  // needs to address a PLI; 0 / -1 until the video pad is linked.
  std::atomic<uint32_t> video_ssrc_{0};
  std::atomic<int> video_pt_{-1};
  std::atomic<bool> linked_video_{false};
  // Every jitter buffer webrtcbin made (audio's and video's share session 0 under max-bundle),
  // by SSRC; stats() reads the video SSRC's. Held with a reference until the ingest ends.
  // At most kMaxJitterBuffers are kept (a publisher that keeps changing SSRC cannot grow it).
  static constexpr size_t kMaxJitterBuffers = 16;
  mutable Mutex jb_mu_;
  std::vector<std::pair<uint32_t, GstElement*>> jitterbuffers_ GUARDED_BY(jb_mu_);
};

}  // namespace veil
