// Fault injection for the in-process AI target, so the fail-closed path can
// be exercised on a running server (inference.fault_injection = true; the
// default build refuses the debug endpoint). A stalled detector holds every
// call until released; a failing one returns an error for every call.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "vision/detector.h"

namespace veil {

class FaultInjector {
 public:
  void Set(bool stall, bool fail) {
    {
      std::lock_guard lk(mu_);
      stall_ = stall;
      fail_ = fail;
    }
    cv_.notify_all();
  }
  bool stalled() const {
    std::lock_guard lk(mu_);
    return stall_;
  }
  bool failing() const {
    std::lock_guard lk(mu_);
    return fail_;
  }
  // Blocks while stalled (shutdown releases it with Set(false, false)).
  void WaitWhileStalled() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !stall_; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stall_ = false, fail_ = false;
};

class FaultInjectingDetector : public Detector {
 public:
  FaultInjectingDetector(std::unique_ptr<Detector> inner, std::shared_ptr<FaultInjector> f)
      : inner_(std::move(inner)), f_(std::move(f)) {}
  std::string name() const override { return inner_->name(); }
  bool native_batch() const override { return inner_->native_batch(); }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float score) override {
    f_->WaitWhileStalled();
    if (f_->failing()) return Status::Error("injected inference failure");
    return inner_->Detect(images, score);
  }
  Result<std::vector<std::vector<cv::Mat>>> Forward(const std::vector<cv::Mat>& images) override {
    f_->WaitWhileStalled();
    if (f_->failing()) return Status::Error("injected inference failure");
    return inner_->Forward(images);
  }

 private:
  std::unique_ptr<Detector> inner_;
  std::shared_ptr<FaultInjector> f_;
};

}  // namespace veil
