#include "inference/target_pool.h"

namespace veil {
namespace {

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

Result<std::vector<TargetSpec>> ParseTargets(const std::string& list) {
  std::vector<TargetSpec> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = list.find(',', pos);
    std::string item =
        Trim(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (item.empty()) return Status::Error("inference.targets: empty entry in '" + list + "'");
    TargetSpec t;
    if (item == "local") {
      t.name = "local";
    } else {
      if (item.rfind("grpc://", 0) == 0) item = item.substr(7);
      const size_t colon = item.rfind(':');
      const std::string host = colon == std::string::npos ? "" : item.substr(0, colon);
      const std::string port = colon == std::string::npos ? "" : item.substr(colon + 1);
      bool ok = !host.empty() && host.size() <= 253 && !port.empty() && port.size() <= 5 &&
                host.find_first_not_of(
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
                    std::string::npos &&
                port.find_first_not_of("0123456789") == std::string::npos;
      if (ok) ok = std::stoi(port) >= 1 && std::stoi(port) <= 65535;
      if (!ok)
        return Status::Error("inference.targets: '" + item +
                             "' is neither 'local' nor HOST:PORT of a KServe v2 gRPC endpoint");
      t.name = t.endpoint = item;
    }
    for (const auto& o : out)
      if (o.name == t.name)
        return Status::Error("inference.targets: '" + t.name + "' is listed twice");
    out.push_back(t);
  }
  if (out.size() > 64) return Status::Error("inference.targets: at most 64 targets");
  return out;
}

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
