// A bounded, latest-frame-wins queue between two threads. When it is full, a
// push evicts the oldest item (the one that would leave latest) and counts it
// as a drop: a slow consumer loses frames, it never slows the producer and
// latency never grows past the capacity.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace veil {

template <typename T>
class LatestQueue {
 public:
  explicit LatestQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // Returns the evicted item, if any (already counted in dropped()).
  std::optional<T> Push(T item) {
    std::optional<T> evicted;
    {
      std::lock_guard lk(mu_);
      if (closed_) return item;
      if (items_.size() >= capacity_) {
        evicted = std::move(items_.front());
        items_.pop_front();
        ++dropped_;
      }
      items_.push_back(std::move(item));
      ++pushed_;
    }
    cv_.notify_one();
    return evicted;
  }

  // Waits up to `timeout` for an item; nullopt on timeout, on a Wake, or when closed and empty.
  std::optional<T> Pop(std::chrono::microseconds timeout) {
    std::unique_lock lk(mu_);
    if (!cv_.wait_for(lk, timeout, [&] { return !items_.empty() || closed_ || woken_; })) return std::nullopt;
    woken_ = false;
    if (items_.empty()) return std::nullopt;
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }

  // The oldest item, if any, without waiting.
  std::optional<T> TryPop() {
    std::lock_guard lk(mu_);
    if (items_.empty()) return std::nullopt;
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }

  // f(the oldest item), if any, without taking it.
  template <typename F>
  auto Front(F f) const -> std::optional<decltype(f(std::declval<const T&>()))> {
    std::lock_guard lk(mu_);
    if (items_.empty()) return std::nullopt;
    return f(items_.front());
  }

  // A waiting Pop (or the next one) returns at once, with an item if there is one: the consumer
  // has something else to do (a command posted to it).
  void Wake() {
    {
      std::lock_guard lk(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

  // Wakes every waiter; later pushes are refused (returned to the caller).
  void Close() {
    {
      std::lock_guard lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  size_t size() const {
    std::lock_guard lk(mu_);
    return items_.size();
  }
  uint64_t dropped() const {
    std::lock_guard lk(mu_);
    return dropped_;
  }
  uint64_t pushed() const {
    std::lock_guard lk(mu_);
    return pushed_;
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;   // guarded by mu_
  uint64_t dropped_ = 0;  // guarded by mu_
  uint64_t pushed_ = 0;   // guarded by mu_
  bool closed_ = false;   // guarded by mu_
  bool woken_ = false;    // guarded by mu_
};

}  // namespace veil
