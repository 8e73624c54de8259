#include "core/command_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace veil {

bool CommandQueue::PostAndWait(Fn fn, const std::function<void()>& wake, double timeout_ms) {
  uint64_t id = 0;
  {
    MutexLock lk(mu_);
    id = ++next_id_;
    items_.push_back(Item{id, std::move(fn)});
  }
  if (wake) wake();
  MutexLock lk(mu_);
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(int64_t(std::max(0.0, timeout_ms) * 1000));
  if (lk.WaitUntil(applied_cv_, until, [&]() REQUIRES(mu_) { return done_through_ >= id; })) return true;
  auto it = std::find_if(items_.begin(), items_.end(), [id](const Item& i) { return i.id == id; });
  if (it != items_.end()) {  // not taken yet: take it back
    items_.erase(it);
    return false;
  }
  lk.Wait(applied_cv_, [&]() REQUIRES(mu_) { return done_through_ >= id; });  // running now
  return true;
}

size_t CommandQueue::ApplyAll() {
  std::deque<Item> batch;
  {
    MutexLock lk(mu_);
    if (items_.empty()) return 0;
    batch.swap(items_);
  }
  auto done = [&] {
    {
      MutexLock lk(mu_);
      done_through_ = std::max(done_through_, batch.back().id);
    }
    applied_cv_.notify_all();
  };
  try {
    for (Item& i : batch) i.fn();
  } catch (...) {
    done();  // its posters must not wait for ever; the worker's own handling takes it from here
    throw;
  }
  done();
  return batch.size();
}

size_t CommandQueue::waiting() const {
  MutexLock lk(mu_);
  return items_.size();
}

}  // namespace veil
