// Commands that other threads post to a serial worker (issue 12 item 6: the HTTP API posts a
// command to a session instead of locking into it). The worker applies them between two of its
// own units of work (a session: between two frames), in the order posted; the poster waits
// until its command has been applied, so what it answers is already true for the worker's next
// unit. A poster that gives up (timeout) takes its command back if the worker has not taken it
// yet: a command is applied exactly once or not at all, and the poster knows which.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>

#include "core/mutex.h"

namespace veil {

class CommandQueue {
 public:
  using Fn = std::function<void()>;

  // Queues fn, calls wake() (which must get the worker to ApplyAll soon: an executor's Ready, a
  // queue's Wake) and waits until fn has run on the worker. false: the worker did not take it
  // within timeout_ms, and it was taken back (it never runs). A command the worker has already
  // taken is waited for whatever the timeout: it is running.
  bool PostAndWait(Fn fn, const std::function<void()>& wake, double timeout_ms) EXCLUDES(mu_);
  // The worker: runs every command posted so far, in order, on the calling thread. Returns how
  // many. A command that throws ends the batch (its posters and the rest of it are released as
  // done) and the exception goes on to the worker.
  size_t ApplyAll() EXCLUDES(mu_);
  size_t waiting() const EXCLUDES(mu_);

 private:
  struct Item {
    uint64_t id = 0;
    Fn fn;
  };
  mutable Mutex mu_;
  std::condition_variable applied_cv_;
  std::deque<Item> items_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  // Every id up to this one has run or was taken back (the worker takes them in order).
  uint64_t done_through_ GUARDED_BY(mu_) = 0;
};

}  // namespace veil
