#include "server/transcode_timing.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/clock.h"
#include "core/thread_cpu.h"
#include "media/codec.h"

namespace veil {
namespace {

// A smooth random field: uniform noise at (w/cell, h/cell), scaled up with cubic interpolation.
cv::Mat Field(std::mt19937& rng, int w, int h, int cell, double amplitude) {
  cv::Mat small(std::max(2, h / cell), std::max(2, w / cell), CV_32F);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int y = 0; y < small.rows; ++y)
    for (int x = 0; x < small.cols; ++x) small.at<float>(y, x) = u(rng);
  cv::Mat big;
  cv::resize(small, big, cv::Size(w, h), 0, 0, cv::INTER_CUBIC);
  return big * amplitude;
}

constexpr int kPan = 4;  // px a frame

}  // namespace

SyntheticPan::SyntheticPan(int frames) : frames_(std::max(1, frames)) {
  const int tw = kWidth + kPan * (frames_ + 2), th = kHeight + frames_ + 2;
  // Luma: large shapes, mid detail and fine grain, like a camera picture; chroma smoother.
  std::mt19937 rng(12345);
  cv::Mat luma = Field(rng, tw, th, 160, 60) + Field(rng, tw, th, 24, 35) + Field(rng, tw, th, 4, 12) + 128.0;
  cv::Mat cu = Field(rng, tw / 2, th / 2, 60, 30) + 128.0, cv_ = Field(rng, tw / 2, th / 2, 60, 30) + 128.0;
  const auto keep = [](const cv::Mat& m, std::vector<uint8_t>& out) {
    cv::Mat m8(m.rows, m.cols, CV_8U);
    m.convertTo(m8, CV_8U);
    out.assign(m8.datastart, m8.dataend);  // continuous: made here
  };
  keep(luma, y_);
  keep(cu, u_);
  keep(cv_, v_);
  luma_stride_ = tw;
  chroma_stride_ = tw / 2;
}

VideoInfo SyntheticPan::Info() {
  VideoInfo vi;
  vi.width = kWidth;
  vi.height = kHeight;
  vi.tb_num = 1;
  vi.tb_den = 90000;
  vi.fps = 30;
  return vi;
}

void SyntheticPan::Fill(int i, Frame& f) const {
  i = std::clamp(i, 0, frames_ - 1);
  const int x = kPan * i, y = i;
  for (int r = 0; r < kHeight; ++r) std::copy_n(&y_[size_t(y + r) * luma_stride_ + x], kWidth, f.y.row(r));
  for (int r = 0; r < kHeight / 2; ++r) {
    const size_t at = size_t(y / 2 + r) * chroma_stride_ + x / 2;
    std::copy_n(&u_[at], kWidth / 2, f.u.row(r));
    std::copy_n(&v_[at], kWidth / 2, f.v.row(r));
  }
}

double UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  double cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  // cgroup v2: "max 100000" (no quota) or "<quota> <period>".
  std::ifstream f("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (f >> quota >> period && quota != "max" && period > 0) {
    try {
      const double q = std::stod(quota) / period;
      if (q > 0) cores = std::min(cores, q);
    } catch (...) {
    }
  }
  return std::max(1.0, cores);
}

Result<double> MeasureTranscodeMs(VideoCodec codec, const EncoderOptions& enc, int frames) {
  auto t = MeasureTranscode(codec, enc, frames, 0);
  if (!t) return t.status();
  return t->total_ms;
}

std::vector<int> TimedCores(int most) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> all;
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) all.push_back(c);
  if (most <= 0 || int(all.size()) <= most) return all;
  std::vector<int> picked;
  for (int i = 0; i < most; ++i) picked.push_back(all[size_t(i) * all.size() / size_t(most)]);
  return picked;
}

Result<TranscodeTiming> CombineCoreTimings(const std::vector<std::pair<int, TranscodeTiming>>& per_core) {
  double inv_total = 0, inv_encode = 0;
  int n = 0, n_encode = 0;
  TranscodeTiming out;
  for (const auto& [core, t] : per_core) {
    if (!(t.total_ms > 0)) continue;
    inv_total += 1 / t.total_ms;
    ++n;
    if (t.encode_ms > 0) {
      inv_encode += 1 / t.encode_ms;
      ++n_encode;
    }
    if (out.plan_encode_ratio <= 0) out.plan_encode_ratio = t.plan_encode_ratio;
    out.faults_per_frame = std::max(out.faults_per_frame, t.faults_per_frame);
    out.by_core.emplace_back(core, t.total_ms);
  }
  if (n == 0) return Status::Error("no core was timed");
  out.total_ms = n / inv_total;
  out.encode_ms = n_encode > 0 ? n_encode / inv_encode : 0;
  return out;
}

namespace {

// The calling thread on one core while it lives; its own mask again after.
class PinnedTo {
 public:
  explicit PinnedTo(int core) {
    CPU_ZERO(&was_);
    if (pthread_getaffinity_np(pthread_self(), sizeof was_, &was_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    ok_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;  // moves the thread there now
  }
  ~PinnedTo() {
    if (ok_) pthread_setaffinity_np(pthread_self(), sizeof was_, &was_);
  }
  PinnedTo(const PinnedTo&) = delete;
  PinnedTo& operator=(const PinnedTo&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t was_;
  bool ok_ = false;
};

}  // namespace

Result<TranscodeTiming> TimeTranscode(VideoCodec codec, const EncoderOptions& enc, int plan_step) {
  constexpr int kFrames = 12;
  // Per core, its cheapest pass. The first pass (on cores[0]) also times the plan step.
  std::vector<std::pair<int, TranscodeTiming>> best;
  const std::vector<int> cores = TimedCores();
  // Each pass warms its own codecs up (MeasureTranscode), so one a core; a node of one core
  // times it twice.
  const size_t passes = cores.size() == 1 ? 2 : cores.size();
  for (size_t i = 0; i < passes && !cores.empty(); ++i) {
    const int core = cores[i % cores.size()];
    PinnedTo pin(core);
    if (!pin.ok()) continue;
    auto t = MeasureTranscode(codec, enc, kFrames, best.empty() ? plan_step : 0, kFrames);
    if (!t) return t;
    auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == core; });
    if (it == best.end()) {
      best.emplace_back(core, *t);
    } else if (t->total_ms < it->second.total_ms) {
      it->second.total_ms = t->total_ms;
      it->second.encode_ms = t->encode_ms;
      it->second.faults_per_frame = t->faults_per_frame;
    }
  }
  if (!best.empty()) return CombineCoreTimings(best);
  // No core could be pinned: two passes where the scheduler puts them, the cheaper kept.
  auto t = MeasureTranscode(codec, enc, kFrames, plan_step, kFrames);
  if (!t) return t;
  if (auto again = MeasureTranscode(codec, enc, kFrames, 0); again && again->total_ms < t->total_ms) {
    t->total_ms = again->total_ms;
    t->encode_ms = again->encode_ms;
    t->faults_per_frame = again->faults_per_frame;
  }
  return t;
}

Result<TranscodeTiming> MeasureTranscode(VideoCodec codec, const EncoderOptions& enc, int frames, int plan_step,
                                         int plan_frames, int warm_frames) {
  constexpr int W = SyntheticPan::kWidth, H = SyntheticPan::kHeight;
  warm_frames = std::max(0, warm_frames);
  const int total = 1 + warm_frames + frames;  // the keyframe, the warm-up, the timed frames
  const SyntheticPan pan(total);
  const VideoInfo vi = SyntheticPan::Info();
  EncoderOptions o = enc;
  o.codec = Name(codec);
  if (codec == VideoCodec::kH264 && o.x264_profile.empty()) o.x264_profile = "baseline";  // as live sessions
  auto encoder = VideoEncoder::Open(codec, vi, o);
  if (!encoder) return encoder.status();
  // The plan step's encoder encodes the same pictures: the two encodes differ only by the step.
  std::unique_ptr<VideoEncoder> planned;
  if (plan_step > 0) {
    auto p = VideoEncoder::Open(codec, vi, o);
    if (!p) return p.status();
    planned = std::move(*p);
    planned->SetSpeedStep(plan_step);
  }
  auto decoder = VideoDecoder::Open(codec, 1);
  if (!decoder) return decoder.status();
  FramePtr f = MakeFrame(W, H);
  std::vector<EncodedFrame> packets;
  std::vector<FramePtr> decoded;
  double cpu = 0, encode_cpu = 0, plan_cpu = 0, paired_cpu = 0;  // paired: step 0's on the plan's frames
  int timed = 0, plan_timed = 0;
  int64_t faults = 0;
  // Frame 0 (the keyframe) and the warm-up are not timed: a freshly opened codec pair touches its
  // buffers for the first time in its first frames (VP8: ~2,500 page faults in frames 1, 2 and 9
  // of this pan; H.264: ~1,000 in frame 1), each a fresh mapping under the server's fixed mmap
  // threshold (cli/service.cpp). A live session's codecs are past that (~9 faults a frame), and
  // what a fault costs moved with this VM's state: from nothing to 28% of the figure within
  // half an hour (docs/figures.md "what the startup timing holds").
  for (int i = 0; i < total; ++i) {
    const bool counted = i > warm_frames;
    pan.Fill(i, *f);
    f->pts = int64_t(i) * 3000;
    packets.clear();
    const int64_t f0 = ThreadPageFaults();
    const double t0 = ThreadCpuMs();
    if (Status s = (*encoder)->Encode(*f, i == 0, packets); !s) return s;
    const double te = ThreadCpuMs();
    for (const EncodedFrame& p : packets) {
      decoded.clear();
      if (Status s = (*decoder)->Decode(p.data.data(), p.data.size(), p.pts, decoded); !s) return s;
    }
    const double t1 = ThreadCpuMs();
    const bool step0_timed = counted && !packets.empty();
    if (step0_timed) {
      cpu += t1 - t0;
      encode_cpu += te - t0;
      faults += ThreadPageFaults() - f0;
      ++timed;
    }
    if (planned && i <= warm_frames + plan_frames) {  // the warm-up too: the same pictures, warm
      packets.clear();
      const double p0 = ThreadCpuMs();
      if (Status s = planned->Encode(*f, i == 0, packets); !s) return s;
      if (step0_timed && !packets.empty() && planned->speed_step() > 0) {
        plan_cpu += ThreadCpuMs() - p0;
        paired_cpu += te - t0;
        ++plan_timed;
      }
    }
  }
  if (timed == 0) return Status::Error(std::string("the ") + Name(codec) + " encoder produced no frames");
  TranscodeTiming t{cpu / timed, encode_cpu / timed, 0, {}};
  t.faults_per_frame = double(faults) / timed;
  if (plan_timed > 0 && paired_cpu > 0) t.plan_encode_ratio = plan_cpu / paired_cpu;
  return t;
}

}  // namespace veil
