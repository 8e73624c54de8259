// The limit a node admits by (server/transcode_timing.h): the standalone transcode is timed,
// with the plan step's encoder on the same pictures, on each core the thread may use, and the
// cores' figures combine as the frames per second they carry together.
#include "server/transcode_timing.h"

#include <gtest/gtest.h>

#include <malloc.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

namespace veil {
namespace {

TEST(Capacity, TheStandaloneTranscodeIsTimed) {
  // It times the encoder: x264's "medium" preset costs several times its "ultrafast" one (thread
  // CPU, so other processes do not count). The gap must dwarf noise: libvpx's slowest and fastest
  // realtime speeds were only 1.2x apart and swapped once under the sanitizers in CI.
  EncoderOptions fast, slow;
  fast.x264_preset = "ultrafast";
  slow.x264_preset = "medium";
  auto f = MeasureTranscodeMs(VideoCodec::kH264, fast, 8);
  auto s = MeasureTranscodeMs(VideoCodec::kH264, slow, 8);
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_GT(*f, 0.2);
  EXPECT_GT(*s, 1.5 * *f) << "ultrafast " << *f << " ms, medium " << *s << " ms";
  // And VP8, as the server times it at startup.
  auto v = MeasureTranscodeMs(VideoCodec::kVp8, EncoderOptions{}, 6);
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_GT(*v, 0.2);
}

TEST(Capacity, TheStandaloneTranscodeTimesThePlanStepOnTheSamePictures) {
  // From "medium", step 4 of x264's ladder is "superfast": several times cheaper an encode.
  EncoderOptions slow;
  slow.x264_preset = "medium";
  auto t = MeasureTranscode(VideoCodec::kH264, slow, 8, 4);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_GT(t->encode_ms, 0.2);
  EXPECT_LT(t->encode_ms, t->total_ms);
  EXPECT_GT(t->plan_encode_ratio, 0.05);
  EXPECT_LT(t->plan_encode_ratio, 1 / 1.5) << "step 4 over step 0";
  // Step 0 times no second encoder.
  auto none = MeasureTranscode(VideoCodec::kVp8, EncoderOptions{}, 4, 0);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_EQ(none->plan_encode_ratio, 0);
}

// One fresh process's figures, as `veil serve` runs (glibc's mmap threshold fixed at 256 KiB,
// cli/service.cpp): a freshly opened codec pair's buffers are fresh mappings whose pages fault
// in over its first frames (VP8: ~2,500 faults in frames 1, 2 and 9 of the pan). Exits 0 when
// the timed frames are past that, as a live session's codecs are (~9 faults a frame).
[[noreturn]] void MeasureFaultsInAFreshProcess() {
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  auto cold = MeasureTranscode(VideoCodec::kVp8, EncoderOptions{}, 12, 0, 12, 0);
  auto warm = MeasureTranscode(VideoCodec::kVp8, EncoderOptions{}, 12);
  auto node = TimeTranscode(VideoCodec::kVp8, EncoderOptions{}, 0);  // each core's pass warm
  if (!cold.ok() || !warm.ok() || !node.ok()) {
    std::fprintf(stderr, "cannot time a transcode\n");
    std::exit(2);
  }
  std::fprintf(stderr, "page faults a timed frame: cold %.1f, warm %.1f, the node's timing %.1f\n",
               cold->faults_per_frame, warm->faults_per_frame, node->faults_per_frame);
  const bool ok = cold->faults_per_frame > 50 &&  // the check can fail
                  warm->faults_per_frame < 20 && warm->faults_per_frame < cold->faults_per_frame / 4 &&
                  node->faults_per_frame < 20 && node->total_ms > 0.2;
  std::exit(ok ? 0 : 1);
}

TEST(Capacity, TheTimedFramesArePastTheCodecsFirstUse) {
  // The oracle is the kernel's count of the thread's page faults. The measurement runs in a
  // fresh process ("threadsafe" death tests run this test alone in a new one): in this one, the
  // codecs earlier tests opened left the heap grown, and a new pair's buffers fault no more.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(MeasureFaultsInAFreshProcess(), testing::ExitedWithCode(0), "page faults a timed frame");
}

TEST(Capacity, UsableCoresFollowsTheAffinityMask) {
  const double c = UsableCores();
  EXPECT_GE(c, 1.0);
  EXPECT_LE(c, double(std::max(1u, std::thread::hardware_concurrency())));
}

// Cores that run at different speeds carry frames per second in sum: two cores at 10 and 15 ms a
// frame carry 100 + 66.7 = 166.7 frames per second, 12 ms a frame each on average (not 12.5).
TEST(Capacity, CoreTimingsCombineAsTheFramesPerSecondTheyCarryTogether) {
  TranscodeTiming fast, slow, zero;
  fast.total_ms = 10;
  fast.encode_ms = 6;
  fast.plan_encode_ratio = 0.8;
  slow.total_ms = 15;
  slow.encode_ms = 9;
  auto t = CombineCoreTimings({{0, fast}, {3, slow}, {5, zero}});
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_NEAR(t->total_ms, 12.0, 1e-9);
  EXPECT_NEAR(t->encode_ms, 7.2, 1e-9);  // 2 / (1/6 + 1/9)
  EXPECT_EQ(t->plan_encode_ratio, 0.8);
  EXPECT_EQ(t->by_core, (std::vector<std::pair<int, double>>{{0, 10.0}, {3, 15.0}})) << "a core that timed nothing is left out";
  auto one = CombineCoreTimings({{2, slow}});
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->total_ms, 15);
  EXPECT_FALSE(CombineCoreTimings({}).ok());
  EXPECT_FALSE(CombineCoreTimings({{1, zero}}).ok());
}

cpu_set_t ThreadMask() {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof s, &s), 0);
  return s;
}

// TimeTranscode times each core the thread may run on (up to kTimedCores), pinned to it, and
// leaves the thread's own mask as it found it; a thread held to one core times that one.
TEST(Capacity, TheTranscodeIsTimedOnEachCoreAndTheMaskIsLeftAsItWas) {
  const cpu_set_t was = ThreadMask();
  std::vector<int> allowed;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &was)) allowed.push_back(c);
  ASSERT_FALSE(allowed.empty());
  auto t = TimeTranscode(VideoCodec::kVp8, EncoderOptions{}, 0);
  ASSERT_TRUE(t.ok()) << t.error();
  std::vector<int> timed;
  for (const auto& [core, ms] : t->by_core) {
    timed.push_back(core);
    EXPECT_GT(ms, 0.2) << "core " << core;
  }
  if (allowed.size() <= size_t(kTimedCores)) EXPECT_EQ(timed, allowed);
  else EXPECT_EQ(timed.size(), size_t(kTimedCores));
  cpu_set_t after = ThreadMask();
  EXPECT_TRUE(CPU_EQUAL(&was, &after)) << "the thread's mask after the timing";
  EXPECT_EQ(TimedCores(1), std::vector<int>{allowed.front()});

  // Held to its last allowed core, the thread times that core alone, and stays held to it.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(allowed.back(), &one);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  auto held = TimeTranscode(VideoCodec::kVp8, EncoderOptions{}, 0);
  after = ThreadMask();
  EXPECT_TRUE(CPU_EQUAL(&one, &after));
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof was, &was), 0);
  ASSERT_TRUE(held.ok()) << held.error();
  ASSERT_EQ(held->by_core.size(), 1u);
  EXPECT_EQ(held->by_core[0].first, allowed.back());
  EXPECT_DOUBLE_EQ(held->total_ms, held->by_core[0].second);  // 1 / (1 / x): x to the last bits
}

}  // namespace
}  // namespace veil
