// What a node's startup transcode timing holds (issue 12; docs/figures.md "what the startup
// timing holds"). Built and run by scripts/timing-probe.sh against the build's static libraries.
//   timing-probe timing [ROUNDS]   TimeTranscode (what `veil serve` times at startup, VP8 with the
//                                  plan step 3, H.264 with 2), ROUNDS times; the page faults each took.
//   timing-probe frames [FRAMES]   one codec pair opened afresh and run FRAMES frames of the same
//                                  synthetic pan, twice: each frame's CPU ms and page faults where
//                                  it faulted, and the mean CPU of frames 1-12 (what a pass times)
//                                  against 13-24.
// Env: MMAP256 (set: glibc's mmap threshold fixed at 256 KiB, as `veil serve` runs,
// cli/service.cpp), H264 (set: `frames` runs H.264), CORE (`frames` pins itself to it; 0).
#include <malloc.h>
#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <opencv2/imgproc.hpp>

extern "C" {
#include <libavutil/log.h>
}

#include "core/clock.h"
#include "core/frame.h"
#include "core/thread_cpu.h"
#include "media/codec.h"
#include "server/transcode_timing.h"

using namespace veil;

namespace {

int64_t ProcessFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_minflt) + int64_t(u.ru_majflt);
}

int64_t ThreadFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return int64_t(u.ru_minflt) + int64_t(u.ru_majflt);
}

void Timing(int rounds) {
  const EncoderOptions enc;
  for (int r = 0; r < rounds; ++r)
    for (VideoCodec c : {VideoCodec::kVp8, VideoCodec::kH264}) {
      const int64_t f0 = ProcessFaults();
      const double t0 = NowMs();
      auto t = TimeTranscode(c, enc, c == VideoCodec::kVp8 ? 3 : 2);
      std::printf("round %d %s: %.2f ms a frame (", r, Name(c), t ? t->total_ms : -1.0);
      if (t)
        for (const auto& [core, ms] : t->by_core) std::printf(" core %d %.2f", core, ms);
      std::printf(" ), %lld page faults, %.0f ms\n", (long long)(ProcessFaults() - f0), NowMs() - t0);
      std::fflush(stdout);
    }
}

cv::Mat Field(std::mt19937& rng, int w, int h, int cell, double amplitude) {  // as MeasureTranscode's
  cv::Mat small(std::max(2, h / cell), std::max(2, w / cell), CV_32F);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int y = 0; y < small.rows; ++y)
    for (int x = 0; x < small.cols; ++x) small.at<float>(y, x) = u(rng);
  cv::Mat big;
  cv::resize(small, big, cv::Size(w, h), 0, 0, cv::INTER_CUBIC);
  return big * amplitude;
}

int Frames(int frames) {
  const bool h264 = std::getenv("H264") != nullptr;
  const VideoCodec vc = h264 ? VideoCodec::kH264 : VideoCodec::kVp8;
  constexpr int W = 1280, H = 720, kPan = 4;
  const int tw = W + kPan * (frames + 2), th = H + frames + 2;
  std::mt19937 rng(12345);
  cv::Mat luma = Field(rng, tw, th, 160, 60) + Field(rng, tw, th, 24, 35) + Field(rng, tw, th, 4, 12) + 128.0;
  cv::Mat cu = Field(rng, tw / 2, th / 2, 60, 30) + 128.0, cv_ = Field(rng, tw / 2, th / 2, 60, 30) + 128.0;
  cv::Mat y8, u8, v8;
  luma.convertTo(y8, CV_8U);
  cu.convertTo(u8, CV_8U);
  cv_.convertTo(v8, CV_8U);
  VideoInfo vi;
  vi.width = W;
  vi.height = H;
  vi.tb_num = 1;
  vi.tb_den = 90000;
  vi.fps = 30;
  EncoderOptions o;
  o.codec = Name(vc);
  if (h264) o.x264_profile = "baseline";
  for (int pass = 0; pass < 2; ++pass) {
    auto enc = VideoEncoder::Open(vc, vi, o);
    auto dec = VideoDecoder::Open(vc, 1);
    if (!enc || !dec) {
      std::fprintf(stderr, "cannot open the %s codecs\n", Name(vc));
      return 1;
    }
    FramePtr f = MakeFrame(W, H);
    std::vector<EncodedFrame> packets;
    std::vector<FramePtr> decoded;
    double first = 0, second = 0;
    std::printf("%s pass %d, frame CPU ms / page faults where it faulted:", Name(vc), pass);
    for (int i = 0; i <= frames; ++i) {
      const int x = kPan * i, y = i;
      for (int r = 0; r < H; ++r) std::copy_n(y8.ptr<uint8_t>(y + r) + x, W, f->y.row(r));
      for (int r = 0; r < H / 2; ++r) {
        std::copy_n(u8.ptr<uint8_t>(y / 2 + r) + x / 2, W / 2, f->u.row(r));
        std::copy_n(v8.ptr<uint8_t>(y / 2 + r) + x / 2, W / 2, f->v.row(r));
      }
      f->pts = int64_t(i) * 3000;
      packets.clear();
      const int64_t f0 = ThreadFaults();
      const double t0 = ThreadCpuMs();
      (void)(*enc)->Encode(*f, i == 0, packets);
      for (const EncodedFrame& p : packets) {
        decoded.clear();
        (void)(*dec)->Decode(p.data.data(), p.data.size(), p.pts, decoded);
      }
      const double ms = ThreadCpuMs() - t0;
      const int64_t faults = ThreadFaults() - f0;
      if (i >= 1 && i <= 12) first += ms;
      if (i >= 13 && i <= 24) second += ms;
      if (faults > 20) std::printf(" [%d] %.1f/%lld", i, ms, (long long)faults);
    }
    std::printf("\n  frames 1-12: %.2f ms a frame; 13-24: %.2f\n", first / 12, frames >= 24 ? second / 12 : 0.0);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  av_log_set_level(AV_LOG_ERROR);
  if (std::getenv("MMAP256")) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  const char* what = argc > 1 ? argv[1] : "timing";
  if (std::strcmp(what, "timing") == 0) {
    Timing(argc > 2 ? std::max(1, std::atoi(argv[2])) : 3);
    return 0;
  }
  if (std::strcmp(what, "frames") == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(std::getenv("CORE") ? std::atoi(std::getenv("CORE")) : 0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    return Frames(argc > 2 ? std::max(24, std::atoi(argv[2])) : 30);
  }
  std::fprintf(stderr, "usage: timing-probe timing [ROUNDS] | frames [FRAMES]\n");
  return 2;
}
