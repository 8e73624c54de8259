// Compiled by ctest with clang's -Wthread-safety (thread_safety_analysis_*): the correct use
// must compile clean, and with VIOLATE defined each misuse must be reported, proving the
// annotations in core/mutex.h are seen by the analysis.
#include "core/mutex.h"

struct Queue {
  veil::Mutex mu;
  std::condition_variable cv;
  int items GUARDED_BY(mu) = 0;
  void Push() {
    veil::MutexLock lk(mu);
    ++items;
    cv.notify_one();
  }
  int Pop() {
    veil::MutexLock lk(mu);
    lk.Wait(cv, [&]() REQUIRES(mu) { return items > 0; });
    return --items;
  }
  int PeekLocked() REQUIRES(mu) { return items; }
#ifdef VIOLATE
  int Racy() { return items; }                  // read without the lock
  int CallsLocked() { return PeekLocked(); }    // calls a REQUIRES function without it
  int EarlyUnlock() {
    veil::MutexLock lk(mu);
    lk.Unlock();
    return items;                               // read after releasing
  }
#endif
};

int main() {
  Queue q;
  q.Push();
  return q.Pop();
}
