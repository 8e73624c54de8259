// What the live-session tests share (live_session_test.cpp, live_session_executor_test.cpp):
// the leakcheck clip as paced RTP, a viewer that decodes what the session sends, a session on
// loopback, and the ground-truth judge of its output (never veil's detector).
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <tuple>
#include <variant>

#include "core/clock.h"
#include "face_check.h"
#include "ground_truth_clip.h"
#include "media/reader.h"
#include "server/live_session.h"
#include "test_util.h"

namespace veil {
namespace {

struct Source {
  std::vector<FramePtr> frames;
  std::vector<EncodedFrame> packets;
};

// The leakcheck clip's first `n` frames (annotated faces at known positions), as a publisher
// encodes them; with key_every > 0, a keyframe every key_every frames (else the encoder's own).
Source LoadSource(int n, int key_every = 0) {
  Source s;
  auto r = MediaReader::Open(test::Media("leakcheck/input.ivf"));
  EXPECT_TRUE(r.ok());
  auto enc = VideoEncoder::Open("vp8", (*r)->info(), {});
  EXPECT_TRUE(enc.ok());
  while (int(s.frames.size()) < n) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    auto* f = std::get_if<FramePtr>(&it);
    if (!f) continue;
    FramePtr copy = MakeFrame((*f)->width, (*f)->height);
    CopyFrame(**f, *copy);
    const bool key = key_every > 0 && s.frames.size() % size_t(key_every) == 0;
    s.frames.push_back(copy);
    const size_t before = s.packets.size();
    EXPECT_TRUE((*enc)->Encode(*copy, key, s.packets).ok());
    EXPECT_EQ(s.packets.size(), before + 1) << "one packet per frame (realtime, no lag)";
    if (key_every > 0) {
      EXPECT_EQ(s.packets.back().keyframe, key);
    }
  }
  return s;
}

// The leakcheck clip's ground truth (lossless master luma and face boxes) of its first 240
// frames, decoded once for every test here.
const test::GroundTruthClip& Truth() {
  static const test::GroundTruthClip clip = test::LoadGroundTruthClip(test::Media("leakcheck"), 240);
  return clip;
}

struct Viewer {
  std::mutex mu;
  std::map<uint32_t, FramePtr> frames;  // by RTP timestamp
  std::map<uint32_t, std::vector<uint8_t>> received;  // the compressed frames, with keep_compressed
  int decode_errors = 0;
  bool keep_compressed = false;
  std::unique_ptr<VideoDecoder> dec;
  std::unique_ptr<RtpReceiver> rx;
  explicit Viewer(bool keep = false) : keep_compressed(keep) {
    dec = std::move(*VideoDecoder::Open("vp8", 1));
    auto r = RtpReceiver::Start({}, [this](EncodedFrame&& f, uint32_t ts) {
      std::vector<FramePtr> out;
      std::lock_guard lk(mu);
      if (keep_compressed) received[ts] = f.data;
      if (dec->Decode(f.data.data(), f.data.size(), ts, out).ok()) {
        for (auto& fr : out) {
          auto copy = MakeFrame(fr->width, fr->height);
          CopyFrame(*fr, *copy);
          frames[ts] = copy;
        }
      } else {
        ++decode_errors;
      }
    });
    EXPECT_TRUE(r.ok()) << r.error();
    rx = std::move(*r);
  }
};

// Sends packets [from, to) paced at 30 fps; RTP timestamp = index * 3000.
void Publish(RtpSender& tx, const Source& s, int from, int to) {
  const double t0 = NowMs();
  for (int i = from; i < to; ++i) {
    const double due = t0 + (i - from) * 1000.0 / 30;
    while (NowMs() < due) std::this_thread::sleep_for(std::chrono::microseconds(500));
    ASSERT_TRUE(tx.Send(s.packets[i], uint32_t(i * 3000)).ok());
  }
}

// A frame executor of `threads` threads, standing in for the server's (null: it did not start).
std::shared_ptr<FrameExecutor> StartExecutor(int threads) {
  auto ex = FrameExecutor::Start(threads);
  EXPECT_TRUE(ex.ok()) << ex.error();
  return ex.ok() ? *ex : nullptr;
}

// Real YuNet through the shared scheduler, one live session on it, and a publisher's sender
// aimed at its ingest port. The session ends before the scheduler shuts down.
struct Rig {
  MetricsRegistry metrics;
  std::unique_ptr<InferenceScheduler> sched;
  std::unique_ptr<LiveSession> session;
  std::unique_ptr<RtpSender> tx;
  explicit Rig(const std::string& id, const LiveSessionConfig& cfg = {},
               std::shared_ptr<FrameExecutor> executor = nullptr) {
    auto sc = InferenceScheduler::Create({}, [] { return LoadDetector({}); }, &metrics, "local");
    EXPECT_TRUE(sc.ok()) << sc.error();
    if (!sc.ok()) return;
    sched = std::move(*sc);
    auto ls = LiveSession::Start(id, cfg, sched.get(), 1, &metrics, std::move(executor));
    EXPECT_TRUE(ls.ok()) << ls.error();
    if (!ls.ok()) return;
    session = std::move(*ls);
    auto t = RtpSender::Start({});
    EXPECT_TRUE(t.ok()) << t.error();
    if (t.ok() && (*t)->AddViewer("127.0.0.1", session->ingest_port()).ok()) tx = std::move(*t);
  }
  ~Rig() {
    session.reset();
    if (sched) sched->Shutdown();
  }
  bool ok() const { return sched && session && tx; }
};

// The annotated faces (ground truth, >= 40 px) of the received frames of source frames
// [from, to), judged by leakcheck's criterion: {judged, visible}. No detector.
[[maybe_unused]] std::pair<int, int> CountFacesVisible(const test::GroundTruthClip& clip, Viewer& v, int from, int to) {
  int judged = 0, visible = 0;
  std::lock_guard lk(v.mu);
  for (const auto& [ts, out] : v.frames) {
    const int i = int(ts / 3000);
    if (i < from || i >= to) continue;
    const test::FaceVerdict verdict = test::JudgeFrame(clip, i, test::LumaOf(*out));
    judged += verdict.judged;
    visible += verdict.visible;
    if (verdict.visible && std::getenv("VEIL_TEST_VERBOSE"))
      std::fprintf(stderr, "frame %d: %d of %d faces visible (max SSIM %.3f)\n", i, verdict.visible, verdict.judged,
                   verdict.max_ssim);
  }
  return {judged, visible};
}
}  // namespace
}  // namespace veil
