#include "core/thread_cpu.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/clock.h"

namespace veil {
namespace {

int64_t Tid() { return int64_t(syscall(SYS_gettid)); }

std::string NameOf(pthread_t t) {
  char name[16] = {};
  pthread_getname_np(t, name, sizeof name);
  return name;
}

// Spins until the calling thread has taken `ms` of its own CPU (CLOCK_THREAD_CPUTIME_ID); returns
// what it took in all.
double Burn(double ms) {
  const double t0 = ThreadCpuMs();
  volatile uint64_t x = 0;
  while (ThreadCpuMs() - t0 < ms) x = x + 1;
  return ThreadCpuMs() - t0;
}

// A thread that burns on request and reports its own CPU clock, kept alive until told to end.
class Burner {
 public:
  explicit Burner(std::string kind) {
    t_ = std::thread([this, kind] {
      NameThisThread(kind);
      std::unique_lock lk(mu_);
      tid_ = Tid();
      cv_.notify_all();
      for (;;) {
        cv_.wait(lk, [&] { return want_ms_ > 0 || end_; });
        if (end_) return;
        const double ms = want_ms_;
        lk.unlock();
        const double took = Burn(ms);
        lk.lock();
        burned_ms_ += took;
        want_ms_ = 0;
        cv_.notify_all();
      }
    });
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return tid_ != 0; });
  }
  ~Burner() {
    {
      std::lock_guard lk(mu_);
      end_ = true;
    }
    cv_.notify_all();
    t_.join();
  }
  // Burns `ms` on the thread; returns its CPU clock's total of what it burned so far.
  double BurnMs(double ms) {
    std::unique_lock lk(mu_);
    want_ms_ = ms;
    cv_.notify_all();
    cv_.wait(lk, [&] { return want_ms_ == 0; });
    return burned_ms_;
  }
  int64_t tid() const { return tid_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t tid_ = 0;
  double want_ms_ = 0, burned_ms_ = 0;
  bool end_ = false;
  std::thread t_;
};

TEST(ThreadCpu, KindsComeFromVeilsOwnNames) {
  EXPECT_EQ(ThreadKindOf("veil-frame"), "frame");
  EXPECT_EQ(ThreadKindOf("veil-http-io"), "http-io");
  EXPECT_EQ(ThreadKindOf("veil"), "main");
  EXPECT_EQ(ThreadKindOf("src:src"), "unnamed");  // GStreamer's own names
  EXPECT_EQ(ThreadKindOf("veil-"), "unnamed");
  EXPECT_EQ(ThreadKindOf("veilx"), "unnamed");
  EXPECT_EQ(ThreadKindOf(""), "unnamed");
}

TEST(ThreadCpu, TheKernelReportsTheNameAThreadGaveItself) {
  std::string name, long_name;
  uint64_t ticks = 0;
  std::thread([&] {
    NameThisThread("named");
    ASSERT_TRUE(ReadThreadStat(Tid(), &name, &ticks));
    NameThisThread("a-kind-longer-than-the-kernel-keeps");
    ASSERT_TRUE(ReadThreadStat(Tid(), &long_name, &ticks));
  }).join();
  EXPECT_EQ(name, "veil-named");
  EXPECT_EQ(long_name, "veil-a-kind-lon");  // 15 characters
  EXPECT_FALSE(ReadThreadStat(-1, &name, &ticks));
}

TEST(ThreadCpu, ThreadsStartedInANameScopeTakeItsNameAndTheStarterGetsItsOwnBack) {
  const std::string before = NameOf(pthread_self());
  std::string inner;
  {
    const ThreadNameScope scope("pool");
    std::thread([&] { inner = NameOf(pthread_self()); }).join();
  }
  EXPECT_EQ(inner, "veil-pool");
  EXPECT_EQ(NameOf(pthread_self()), before);
}

// What a named thread burned, by its own CPU clock, shows under its kind; a thread seen by the
// previous sample adds only what it took since.
TEST(ThreadCpu, TheSamplerAddsEachKindsCpuOnce) {
  ThreadCpuSampler sampler;
  const std::map<std::string, double> at_start = sampler.Sample();  // the threads alive now, all they took
  Burner burner("burner");
  const double first = burner.BurnMs(200);
  const double after_first = sampler.Sample().at("burner");
  const double both = burner.BurnMs(200);
  const double after_both = sampler.Sample().at("burner");
  // The kernel's tick (1/100 s here) is the sampler's unit: each reading is within a tick or two.
  EXPECT_NEAR(after_first * 1000, first, 25);
  EXPECT_NEAR(after_both * 1000, both, 25);  // not first + both: the thread was seen before
  EXPECT_GT(both, first + 150);
  // This thread burned nothing of the burner's: the other kinds' totals hardly moved.
  double others = 0;
  for (const auto& [kind, s] : sampler.totals())
    if (kind != "burner") others += s - (at_start.count(kind) ? at_start.at(kind) : 0.0);
  EXPECT_LT(others * 1000, 150) << "other kinds took the burner's CPU";
}

// A sample taken again at once adds (about) nothing; a thread that ends keeps what was counted.
TEST(ThreadCpu, AnEndedThreadKeepsWhatWasCountedAndNothingIsCountedTwice) {
  ThreadCpuSampler sampler;
  double burned = 0;
  {
    Burner burner("ends");
    burned = burner.BurnMs(150);
    sampler.Sample();
  }
  const double kept = sampler.Sample().at("ends");
  EXPECT_NEAR(kept * 1000, burned, 25);
  EXPECT_NEAR(sampler.Sample().at("ends"), kept, 1e-9);
}

}  // namespace
}  // namespace veil
