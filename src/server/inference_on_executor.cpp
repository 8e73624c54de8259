#include "server/inference_on_executor.h"

#include <utility>
#include <vector>

namespace veil {

class InferenceOnExecutor::Client final : public FrameExecutor::Client {
 public:
  Client(InferenceScheduler* s, double budget_ms) : s_(s), budget_ms_(budget_ms) {}
  std::optional<double> RunOne() override {
    const std::optional<double> oldest = s_->RunPending();
    if (!oldest) return std::nullopt;
    return *oldest + budget_ms_;
  }

 private:
  InferenceScheduler* const s_;
  const double budget_ms_;
};

InferenceOnExecutor::InferenceOnExecutor(std::shared_ptr<FrameExecutor> executor, double budget_ms)
    : executor_(std::move(executor)), budget_ms_(budget_ms) {}

InferenceOnExecutor::~InferenceOnExecutor() {
  std::vector<InferenceScheduler*> left;
  {
    MutexLock lk(mu_);
    for (auto& [s, c] : clients_) left.push_back(s);
  }
  for (InferenceScheduler* s : left) Forget(s);
}

void InferenceOnExecutor::Wake(InferenceScheduler* s, double submitted_ms) {
  MutexLock lk(mu_);
  auto& c = clients_[s];
  if (!c) c = std::make_unique<Client>(s, budget_ms_);
  executor_->Ready(c.get(), submitted_ms + budget_ms_);
}

void InferenceOnExecutor::Forget(InferenceScheduler* s) {
  std::unique_ptr<Client> c;
  {
    MutexLock lk(mu_);
    auto it = clients_.find(s);
    if (it == clients_.end()) return;
    c = std::move(it->second);
    clients_.erase(it);
  }
  executor_->Remove(c.get());  // a batch it runs now ends first
}

}  // namespace veil
