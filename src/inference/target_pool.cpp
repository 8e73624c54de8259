#include "inference/target_pool.h"

namespace veil {

TargetPool::TargetPool(std::vector<std::string> names) {
  for (auto& n : names) {
    TargetState t;
    t.name = std::move(n);
    targets_.push_back(std::move(t));
  }
}

Result<int> TargetPool::Assign(uint64_t session) {
  std::lock_guard lk(mu_);
  if (auto it = assignment_.find(session); it != assignment_.end()) return it->second;
  int best = -1;
  for (int i = 0; i < int(targets_.size()); ++i) {
    const TargetState& t = targets_[i];
    if (!t.healthy) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const TargetState& b = targets_[best];
    if (t.active_streams < b.active_streams ||
        (t.active_streams == b.active_streams && t.latency_ms < b.latency_ms))
      best = i;
  }
  if (best < 0) return Status::Error("no healthy AI target");
  ++targets_[best].active_streams;
  assignment_[session] = best;
  return best;
}

void TargetPool::Release(uint64_t session) {
  std::lock_guard lk(mu_);
  auto it = assignment_.find(session);
  if (it == assignment_.end()) return;
  --targets_[it->second].active_streams;
  assignment_.erase(it);
}

std::vector<uint64_t> TargetPool::SetHealthy(int target, bool healthy, const std::string& reason) {
  std::lock_guard lk(mu_);
  std::vector<uint64_t> moved;
  if (target < 0 || target >= int(targets_.size())) return moved;
  TargetState& t = targets_[target];
  t.healthy = healthy;
  t.down_reason = healthy ? "" : reason;
  if (!healthy) {
    for (auto it = assignment_.begin(); it != assignment_.end();) {
      if (it->second == target) {
        moved.push_back(it->first);
        it = assignment_.erase(it);
      } else {
        ++it;
      }
    }
    t.active_streams = 0;
  }
  return moved;
}

void TargetPool::RecordLatency(int target, double ms) {
  std::lock_guard lk(mu_);
  if (target < 0 || target >= int(targets_.size())) return;
  double& l = targets_[target].latency_ms;
  l = l == 0 ? ms : 0.8 * l + 0.2 * ms;
}

std::vector<TargetState> TargetPool::Snapshot() const {
  std::lock_guard lk(mu_);
  return targets_;
}

int TargetPool::TargetOf(uint64_t session) const {
  std::lock_guard lk(mu_);
  auto it = assignment_.find(session);
  return it == assignment_.end() ? -1 : it->second;
}

bool TargetPool::AnyHealthy() const {
  std::lock_guard lk(mu_);
  for (const auto& t : targets_)
    if (t.healthy) return true;
  return false;
}

}  // namespace veil
