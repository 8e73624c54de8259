// A node's learned costs kept across restarts (server.capacity_state, docs/capacity.md): a
// restarted node admits by what it learned from its sessions instead of by the priors and one
// startup timing (a fresh node admitted 3 or 4 anonymized VP8 sessions by that timing's noise
// where the node that had learned admitted 4; docs/figures.md).
//
// A file is used only where it was learned: the same CPU model, the same cores, the same build
// of veil, and the same settings that change what a session costs (the caller's text: encoder,
// decoder, privacy, detector, inference and the executor's keys). Anything else (another
// machine, an upgrade, a changed detection size) and the node starts from its priors, and says
// why. A learned cost comes back as the CPU per frame it was learned as (its ratio times the
// transcode the learning process timed, over the one this start timed): one startup timing
// reads 20-60% high now and then (one H.264 start read 16.2 ms where the next read 10.1, and its
// sessions' learned 1.00x of it was 16.3 ms a frame, as the others' 1.5x), so rescaling by a new
// timing moved a learned cost by that timing's noise.
#pragma once
#include <string>

#include "core/status.h"
#include "server/capacity.h"

namespace veil {

struct CapacityKey {
  std::string cpu;       // /proc/cpuinfo's model name
  double cores = 0;      // the cores the model counts on
  std::string build;     // sha256 of this executable
  std::string settings;  // sha256 of the cost-relevant settings' text
};
// This process's key: its CPU model and executable, `cores`, and a hash of `cost_settings`.
CapacityKey ThisNodeKey(double cores, const std::string& cost_settings);

std::string CapacityStateJson(const CapacityMemory& m, const CapacityKey& key, const std::string& saved_utc);
// The memory in `text`, checked: its format, every figure's range, and its key against
// `expect` (kConflict naming what differs; kInvalidArgument for a malformed file).
Result<CapacityMemory> ParseCapacityState(const std::string& text, const CapacityKey& expect);
// The same from a file; kNotFound where there is none yet.
Result<CapacityMemory> LoadCapacityState(const std::string& path, const CapacityKey& expect);
// Writes `text` to `path` whole or not at all: a temporary file beside it, renamed over it.
Status SaveCapacityState(const std::string& path, const std::string& text);
// Whether `path` can be written: its directory exists and is writable (checked at startup).
Status CheckCapacityStatePath(const std::string& path);

}  // namespace veil
