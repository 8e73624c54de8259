// SessionManager: WHIP publishers and WHEP viewers (the negotiation runs outside the table's lock).
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "server/session_manager.h"
#include "transport/net/udp.h"

namespace veil {

WebRtcPeerConfig SessionManager::PeerConfig() const {
  WebRtcPeerConfig c;
  const WebRtcSettings& w = deps_.server.webrtc;
  c.ice_address = w.ice_address;
  c.latency_ms = w.jitter_ms;
  c.timeout_ms = w.negotiate_timeout_ms;
  c.start_bitrate_kbps = w.start_bitrate_kbps;
  return c;
}

Status SessionManager::Publish(const std::string& id, const std::string& offer_text, const std::string& caller,
                                 WebRtcAnswer* out) {
  if (!ValidSessionId(id)) return Status::Error(StatusCode::kInvalidArgument, "session id must be 1-64 characters of A-Z a-z 0-9 - _");
  OfferRules rules;
  rules.role = OfferRole::kPublish;
  rules.loopback_only = IsLoopback(deps_.server.webrtc.ice_address);
  std::shared_ptr<LiveSession> session = Find(id);
  if (session) {
    if (session->config().ingest != IngestKind::kWebRtc) return Status::Error(StatusCode::kConflict, "session '" + id + "' takes plain RTP ingest");
    rules.video_codecs = {session->config().codec};
  }
  auto offer = ParseOffer(offer_text, rules);
  if (!offer) return Status::Error(offer.status().code(), "SDP offer: " + offer.error());
  bool created = false;
  if (!session) {
    CreateSpec spec;
    spec.id = id;
    spec.codec = offer->video()->video_codec;
    spec.audio = offer->audio() != nullptr;
    spec.ingest = IngestKind::kWebRtc;
    SessionInfo info;
    if (Status e = Create(spec, caller, &info); !e) return e;
    session = Find(id);
    created = true;
    if (!session) return Status::Error(StatusCode::kConflict, "session '" + id + "' ended while it was being published");
  }
  std::string answer;
  const double t0 = NowMs();
  if (Status s = session->AttachPublisher(*offer, PeerConfig(), &answer); !s) {
    if (created) Take(id, "error", "WHIP negotiation failed: " + s.message()).reset();
    if (s.code() == StatusCode::kConflict || s.code() == StatusCode::kUnsupported) return s;
    return Status::Error(StatusCode::kInternal, "WebRTC negotiation failed: " + s.message());
  }
  MutexLock lk(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.session != session) return Status::Error(StatusCode::kConflict, "session '" + id + "' ended during the negotiation");
  it->second.info.publisher = RandomId("p", 6);  // unguessable: the Location is the only handle
  out->session = id;
  out->resource = it->second.info.publisher;
  out->sdp = answer;
  AddEvent("publisher_attached", id,
           out->resource + " whip codec=" + Name(session->config().codec) + " audio=" + (offer->audio() ? "opus" : "none") +
               " candidates kept/dropped=" + std::to_string(offer->candidates_kept) + "/" +
               std::to_string(offer->candidates_dropped) + " negotiated in " + std::to_string(int(NowMs() - t0)) +
               " ms by " + caller);
  return {};
}

Status SessionManager::Unpublish(const std::string& id, const std::string& resource, const std::string& caller) {
  {
    MutexLock lk(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.session || it->second.info.publisher.empty() ||
        it->second.info.publisher != resource)
      return Status::Error(StatusCode::kNotFound, "no WHIP resource '" + resource + "' in session '" + id + "'");
  }
  auto s = Take(id, "unpublished", "WHIP DELETE by " + caller);
  if (!s) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  s.reset();
  return {};
}

Status SessionManager::Watch(const std::string& id, const std::string& offer_text, const std::string& caller,
                               WebRtcAnswer* out) {
  std::shared_ptr<LiveSession> session = Find(id);
  if (!session) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
  OfferRules rules;
  rules.role = OfferRole::kView;
  rules.video_codecs = {session->config().codec};
  rules.loopback_only = IsLoopback(deps_.server.webrtc.ice_address);
  auto offer = ParseOffer(offer_text, rules);
  if (!offer) return Status::Error(offer.status().code(), "SDP offer: " + offer.error());
  std::string key;
  {
    MutexLock lk(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.session != session) return Status::Error(StatusCode::kNotFound, "no session '" + id + "'");
    Entry& e = it->second;
    if (int(e.info.viewers.size()) >= deps_.server.max_viewers)
      return Status::Error(StatusCode::kUnavailable, "viewer limit reached (" + std::to_string(deps_.server.max_viewers) + ", server.max_viewers)");
    if (std::string why = OverloadReason(); !why.empty()) return Status::Error(StatusCode::kUnavailable, why);
    key = RandomId("w", 6);  // unguessable: with public viewing, the Location is the only handle
    e.info.viewers.push_back({key, "", 0, 0, ViewerKind::kWebRtc});  // holds its place under the limit
  }
  std::string answer;
  const double t0 = NowMs();
  const Status s = session->AddWebViewer(key, *offer, PeerConfig(), &answer);
  MutexLock lk(mu_);
  auto it = sessions_.find(id);
  const bool alive = it != sessions_.end() && it->second.session == session;
  if (!s || !alive) {
    if (alive) {
      auto& vs = it->second.info.viewers;
      vs.erase(std::remove_if(vs.begin(), vs.end(), [&](const ViewerInfo& v) { return v.id == key; }), vs.end());
    }
    if (s) session->RemoveWebViewer(key);
    return s ? Status::Error(StatusCode::kNotFound, "session '" + id + "' ended during the negotiation")
             : Status::Error(StatusCode::kInternal, "WebRTC negotiation failed: " + s.message());
  }
  out->session = id;
  out->resource = key;
  out->sdp = answer;
  AddEvent("viewer_added", id,
           key + " whep audio=" + (offer->audio() ? "opus" : "none") + " negotiated in " +
               std::to_string(int(NowMs() - t0)) + " ms by " + caller);
  return {};
}

}  // namespace veil
