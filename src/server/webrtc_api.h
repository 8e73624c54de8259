// WHIP (RFC 9725) publish and WHEP watch over HTTP, in front of the session
// manager:
//   POST   /whip/{session}             SDP offer -> 201, Location, SDP answer (creates the session)
//   DELETE /whip/{session}/{resource}  the publisher leaves; the session ends
//   POST   /whep/{session}             SDP offer -> 201, Location, SDP answer (a viewer)
//   DELETE /whep/{session}/{viewer}
//   OPTIONS on all of them: CORS preflight, Accept-Post: application/sdp
//   PATCH  (trickle ICE / ICE restart): 405, veil answers non-trickle only
// Publishing needs "Authorization: Bearer <webrtc.publish_token>"; watching
// needs webrtc.view_token when one is set. Offers are admitted through a
// token bucket (webrtc.offers_per_s) and at most webrtc.max_pending at once,
// each kept separately for WHIP and WHEP, so viewers (public by default) can
// never throttle publishers; anything beyond is 429 with Retry-After. A WHEP
// offer for a session that does not exist is 404 before it costs a token.
#pragma once
#include <atomic>
#include <mutex>
#include <string>

#include "config/config.h"
#include "core/metrics.h"
#include "http/router.h"
#include "server/session_manager.h"

namespace veil {

class WebRtcRoutes {
 public:
  WebRtcRoutes(SessionManager* sessions, MetricsRegistry* metrics, const WebRtcSettings& s);
  void Register(http::Router& h);

 private:
  // Rate and concurrency of one kind of offer (WHIP or WHEP).
  struct Gate {
    std::atomic<int> pending{0};
    std::mutex mu;
    double tokens = 0, at_ms = 0;  // guarded by mu
  };
  // Admission of one offer: "" when admitted (release with --g.pending), else why not.
  std::string Admit(Gate& g);
  void Cors(http::Response& res) const;
  void Offer(const http::Request& req, http::Response& res, bool publish);
  Counter& Offers(const char* kind, const char* result);

  SessionManager* sessions_;
  MetricsRegistry* metrics_;
  const WebRtcSettings s_;
  Gate whip_, whep_;
};

}  // namespace veil
