// A scriptable Detector for tests: fixed boxes (or, when none are set, one
// box per image whose x is the image's first pixel, so a result can be traced
// to its request), injected failures and delays, and a gate that holds calls
// so a queue can build up. Safe to drive from the test thread while an
// inference thread calls Detect().
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "vision/detector.h"

namespace veil::test {

class FakeDetector : public Detector {
 public:
  std::string name() const override { return "fake"; }
  bool native_batch() const override { return true; }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float) override {
    {
      std::unique_lock lk(mu);
      ++calls;
      batches.push_back(int(images.size()));
      sizes.push_back(images[0].size());
      cv.notify_all();
      cv.wait(lk, [&] { return open; });
    }
    if (on_detect) on_detect();
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    if (fail) return Status::Error("injected failure");
    if (throws) throw std::runtime_error("injected exception");  // as cv::dnn does on a bad input
    std::vector<Detections> out;
    for (const auto& im : images) {
      if (!boxes.empty()) out.push_back(boxes);
      else out.push_back({{{float(im.at<cv::Vec3b>(0, 0)[0]), 0, 10, 10}, 0.9f}});
    }
    return out;
  }
  // Raw outputs: one 1x1 CV_32F Mat per image holding its first pixel's blue value.
  Result<std::vector<std::vector<cv::Mat>>> Forward(const std::vector<cv::Mat>& images) override {
    {
      std::unique_lock lk(mu);
      ++calls;
      batches.push_back(-int(images.size()));  // negative: a raw batch
      cv.notify_all();
      cv.wait(lk, [&] { return open; });
    }
    if (fail) return Status::Error("injected failure");
    std::vector<std::vector<cv::Mat>> out;
    for (const auto& im : images) {
      const float v = im.type() == CV_32FC3 ? im.at<cv::Vec3f>(0, 0)[0] : float(im.at<cv::Vec3b>(0, 0)[0]);
      out.push_back({cv::Mat(1, 1, CV_32F, cv::Scalar(v))});
    }
    return out;
  }
  void Close() {
    std::lock_guard lk(mu);
    open = false;
  }
  void Open() {
    std::lock_guard lk(mu);
    open = true;
    cv.notify_all();
  }
  int Calls() {
    std::lock_guard lk(mu);
    return calls;
  }
  void WaitCalls(int n) {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return calls >= n; });
  }

  Detections boxes;  // set before use
  std::function<void()> on_detect;  // set before use: runs on the inference thread in each Detect()
  std::atomic<bool> fail{false};
  std::atomic<bool> throws{false};  // Detect() throws (as cv::dnn does on a bad input)
  std::atomic<int> sleep_ms{0};
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;               // guarded by mu
  int calls = 0;                  // guarded by mu
  std::vector<int> batches;       // guarded by mu
  std::vector<cv::Size> sizes;    // guarded by mu
};

}  // namespace veil::test
