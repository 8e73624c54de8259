// A live session's publisher and viewers (server/live_session.h): the WHIP publisher, WHEP
// viewers and plain RTP viewers, added and removed while the session runs.
#include "core/clock.h"
#include "server/live_session.h"

namespace veil {

Status LiveSession::AttachPublisher(const Offer& offer, const WebRtcPeerConfig& c, std::string* answer) {
  if (cfg_.ingest != IngestKind::kWebRtc) return Status::Error(StatusCode::kConflict, "this session takes plain RTP ingest, not WHIP");
  {
    MutexLock lk(web_mu_);
    if (whip_) return Status::Error(StatusCode::kConflict, "this session already has a publisher");
  }
  const OfferMedia* v = offer.video();
  if (!v || v->video_codec != cfg_.codec)
    return Status::Error(StatusCode::kUnsupported, std::string("the offer's video codec is not the session's (") +
                                                       Name(cfg_.codec) + ")");
  UdpRelay* audio = audio_.get();
  auto in = WhipIngest::Start(
      offer, c, [this](EncodedFrame&& f, uint32_t ts) { OnEncoded(std::move(f), ts); },
      [audio](const uint8_t* d, size_t n) {
        if (audio) audio->Forward(d, n);
      },
      answer);
  if (!in) return in.status();
  MutexLock lk(web_mu_);
  if (whip_) return Status::Error(StatusCode::kConflict, "this session already has a publisher");
  whip_ = std::move(*in);
  whip_raw_ = whip_.get();
  return Status::Ok();
}

Status LiveSession::AddWebViewer(const std::string& key, const Offer& offer, const WebRtcPeerConfig& c,
                                 std::string* answer) {
  {
    MutexLock lk(web_mu_);
    if (web_viewers_.count(key)) return Status::Error("viewer " + key + " exists");
  }
  auto v = WhepViewer::Start(offer, c, [this] { RequestKeyframe(300); }, answer);
  if (!v) return v.status();
  std::shared_ptr<WhepViewer> peer = std::move(*v);
  MutexLock lk(web_mu_);
  if (Status s = sender_->AddSink(key, [peer](const RtpFrame& f) { return peer->PushVideo(f); }); !s) return s;
  if (audio_) audio_->AddTap(key, [peer](const uint8_t* d, size_t n) { peer->PushAudio(d, n); });
  web_viewers_[key] = {peer, NowMs()};
  want_keyframe_ = true;
  bridge_wanted_ = true;
  return Status::Ok();
}

bool LiveSession::RemoveWebViewer(const std::string& key) {
  std::shared_ptr<WhepViewer> peer;
  {
    MutexLock lk(web_mu_);
    auto it = web_viewers_.find(key);
    if (it == web_viewers_.end()) return false;
    peer = std::move(it->second.peer);
    web_viewers_.erase(it);
  }
  sender_->RemoveSink(key);  // joins its fan-out thread: no more pushes
  if (audio_) audio_->RemoveTap(key);
  peer.reset();  // stops its pipeline (this thread is not a streaming thread)
  return true;
}

std::map<std::string, std::string> LiveSession::DeadWebViewers(double connect_timeout_ms) {
  std::map<std::string, std::string> dead;
  const double now = NowMs();
  MutexLock lk(web_mu_);
  for (auto& [key, v] : web_viewers_) {
    if (std::string e = v.peer->PollError(); !e.empty()) dead[key] = e;
    else if (v.peer->connected_ms() == 0 && now - v.added_ms > connect_timeout_ms)
      dead[key] = "did not connect in " + std::to_string(int(connect_timeout_ms)) + " ms";
  }
  return dead;
}

Status LiveSession::AddViewer(const std::string& host, int video_port, int audio_port) {
  if (audio_port != 0) {
    if (!audio_) return Status::Error("this session has no audio");
    if (Status s = audio_->AddDestination(host, audio_port); !s) return Status::Error("audio " + s.message());
  }
  if (Status s = sender_->AddViewer(host, video_port); !s) {
    if (audio_port != 0) audio_->RemoveDestination(host, audio_port);
    return s;
  }
  want_keyframe_ = true;
  bridge_wanted_ = true;
  return Status::Ok();
}

void LiveSession::RemoveViewer(const std::string& host, int video_port, int audio_port) {
  sender_->RemoveViewer(host, video_port);
  if (audio_ && audio_port != 0) audio_->RemoveDestination(host, audio_port);
}

}  // namespace veil
