// A mutex and scoped lock that clang's thread-safety analysis understands
// (-Wthread-safety: the clang builds of scripts/fuzz.sh and scripts/sanitize.sh
// make its findings errors). Fields marked GUARDED_BY(mu) may only be touched
// with mu held; functions marked REQUIRES(mu) only called with it held. Under
// GCC the macros expand to nothing and these are plain std::mutex wrappers.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define VEIL_TSA(x) __attribute__((x))
#else
#define VEIL_TSA(x)
#endif

#define CAPABILITY(x) VEIL_TSA(capability(x))
#define SCOPED_CAPABILITY VEIL_TSA(scoped_lockable)
#define GUARDED_BY(x) VEIL_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) VEIL_TSA(pt_guarded_by(x))
#define REQUIRES(...) VEIL_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) VEIL_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) VEIL_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) VEIL_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) VEIL_TSA(try_acquire_capability(__VA_ARGS__))
#define RETURN_CAPABILITY(x) VEIL_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS VEIL_TSA(no_thread_safety_analysis)

namespace veil {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope; waits on a condition variable with it held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) ACQUIRE(m) : lk_(m.native()) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  // Releases early (the destructor then does nothing).
  void Unlock() RELEASE() { lk_.unlock(); }
  // Takes it again after Unlock.
  void Relock() ACQUIRE() { lk_.lock(); }
  MutexLock& operator=(const MutexLock&) = delete;

  // The predicate runs with the mutex held; mark it with REQUIRES when it reads guarded fields.
  template <typename Pred>
  void Wait(std::condition_variable& cv, Pred pred) {
    cv.wait(lk_, pred);
  }
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> d, Pred pred) {
    return cv.wait_for(lk_, d, pred);
  }
  template <typename Clock, typename Dur, typename Pred>
  bool WaitUntil(std::condition_variable& cv, std::chrono::time_point<Clock, Dur> t, Pred pred) {
    return cv.wait_until(lk_, t, pred);
  }

 private:
  std::unique_lock<std::mutex> lk_;
};

}  // namespace veil
