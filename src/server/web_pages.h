// The pages `veil serve` serves to browsers (web/*.html, embedded at build time).
#pragma once
#include <string_view>

namespace veil {

// The operator page: sessions with per-stage timings and privacy-mode
// buttons, AI targets, events. It holds no data: its script calls the
// control API (with the token the operator types when the server wants one).
std::string_view OperatorPage();

}  // namespace veil
