// The pages `veil serve` serves to browsers (web/*.html, embedded at build time).
// They hold no data: their scripts call this server (the control API with
// the token the operator types, WHIP/WHEP with the publish/view token).
#pragma once
#include <string_view>

namespace veil {

// Sessions with per-stage timings and privacy-mode buttons, AI targets, events.
std::string_view OperatorPage();
// Camera preview, go live over WHIP, live stats.
std::string_view PublishPage();
// WHEP player with FPS, latency and resolution.
std::string_view WatchPage();
// WHIP/WHEP signalling and frame-code helpers shared by the two (/webrtc.js).
std::string_view WebRtcScript();

}  // namespace veil
