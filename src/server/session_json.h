// The JSON views of a session (docs/api.md): what GET /v1/sessions/{id} and .../stats answer,
// shared with the CLI (demo) and tests.
#pragma once
#include <nlohmann/json.hpp>

#include "server/session_manager.h"

namespace veil {

nlohmann::json SessionJson(const SessionInfo& s, bool with_stats);
nlohmann::json StatsJson(const SessionInfo& s);

}  // namespace veil
