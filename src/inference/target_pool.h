// Assigns sessions to AI targets: each new session goes to the healthy target
// with the fewest active streams (ties: lowest recent latency, then the
// earliest configured). An assignment is per session and stable until the
// session ends or its target goes down; there is no counter that advances on
// restarts (the field report's cause 5).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace veil {

struct TargetSpec {
  std::string name;      // "local" or the endpoint
  std::string endpoint;  // host:port; empty for the in-process target
  bool local() const { return endpoint.empty(); }
};
// "local,127.0.0.1:8001,grpc://10.0.0.5:8001" -> specs (order breaks ties).
Result<std::vector<TargetSpec>> ParseTargets(const std::string& list);

struct TargetState {
  std::string name;
  bool healthy = true;
  int active_streams = 0;
  double latency_ms = 0;  // exponential moving average of recent inference latency
  std::string down_reason;
};

class TargetPool {
 public:
  explicit TargetPool(std::vector<std::string> names);
  // The session's target (assigning it now if it has none). Error when no target is healthy.
  Result<int> Assign(uint64_t session);
  void Release(uint64_t session);
  // Marks a target down (its sessions are unassigned and returned, to be
  // assigned again) or back up (it takes new sessions).
  std::vector<uint64_t> SetHealthy(int target, bool healthy, const std::string& reason = "");
  void RecordLatency(int target, double ms);
  std::vector<TargetState> Snapshot() const;
  int TargetOf(uint64_t session) const;  // -1 when unassigned
  bool AnyHealthy() const;

 private:
  mutable std::mutex mu_;
  std::vector<TargetState> targets_;    // guarded by mu_
  std::map<uint64_t, int> assignment_;  // guarded by mu_
};

}  // namespace veil
