// A gate a test opens once: threads that Wait block until it is open (or the timeout passes).
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace veil::test {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Open() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
  bool Wait(std::chrono::milliseconds t = std::chrono::milliseconds(5000)) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, t, [&] { return open; });
  }
};

}  // namespace veil::test
