// The in-process AI target's detections on the frame executor (server.detect_on_executor,
// docs/capacity.md "Detections on the executor"): a hosted InferenceScheduler
// (inference/scheduler.h) is one client of the executor, and each of its batches is due as a
// frame handed over when the batch's oldest request was submitted, budget_ms later. The cores
// then serve one earliest-deadline-first order instead of the executor's threads and an
// inference thread the OS time-slices between them.
#pragma once
#include <map>
#include <memory>

#include "core/mutex.h"
#include "inference/scheduler.h"
#include "server/frame_executor.h"

namespace veil {

class InferenceOnExecutor final : public InferenceHost {
 public:
  InferenceOnExecutor(std::shared_ptr<FrameExecutor> executor, double budget_ms);
  ~InferenceOnExecutor() override;  // forgets every scheduler still known

  void Wake(InferenceScheduler* s, double submitted_ms) override EXCLUDES(mu_);
  void Forget(InferenceScheduler* s) override EXCLUDES(mu_);

 private:
  class Client;
  const std::shared_ptr<FrameExecutor> executor_;
  const double budget_ms_;
  Mutex mu_;  // held across the executor's Ready, so no Ready follows a Forget
  std::map<InferenceScheduler*, std::unique_ptr<Client>> clients_ GUARDED_BY(mu_);
};

}  // namespace veil
