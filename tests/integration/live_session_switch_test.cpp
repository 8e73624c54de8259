// A mode switch covers every frame that leaves after the call answers, the frame the worker is
// in the middle of included (LiveSession::SetMode posts a command that the worker applies
// between two frames, and answers once it has). The worker's frames are made long with the
// CPU-hog fault (after the privacy stage, before the encode) so that a switch always lands in
// one. When did a frame leave: the kernel's receive timestamp of its first packet at a plain UDP
// viewer (loopback delivers within the sender's send call). Was it covered: the clip's ground
// truth (annotated faces), never veil's detector.
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <mutex>

#include "live_session_rig.h"
#include "transport/net/udp.h"

namespace veil {
namespace {

double RealtimeMs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// A plain RTP viewer that keeps, per RTP timestamp, when its first packet arrived (the kernel's
// SO_TIMESTAMPNS, CLOCK_REALTIME ms).
struct ArrivalTap {
  UdpSocket sock;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<uint32_t, double> first_ms;  // guarded by mu
  ArrivalTap() {
    auto s = UdpSocket::Bind("127.0.0.1", 0, 1 << 22);
    EXPECT_TRUE(s.ok()) << s.error();
    if (!s.ok()) return;
    sock = std::move(*s);
    int on = 1;
    EXPECT_EQ(setsockopt(sock.fd(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on), 0);
    thread = std::thread([this] { Loop(); });
  }
  ~ArrivalTap() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
  void Loop() {
    std::vector<uint8_t> buf(65536);
    alignas(cmsghdr) char control[256];
    while (!stop) {
      pollfd p{sock.fd(), POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      iovec iov{buf.data(), buf.size()};
      msghdr m{};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      const ssize_t n = recvmsg(sock.fd(), &m, 0);
      if (n < 12) continue;
      double at = RealtimeMs();  // no kernel timestamp: when read (never earlier than it came)
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts{};
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          at = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
        }
      const uint32_t rtp_ts = uint32_t(buf[4]) << 24 | uint32_t(buf[5]) << 16 | uint32_t(buf[6]) << 8 | buf[7];
      std::lock_guard lk(mu);
      first_ms.emplace(rtp_ts, at);
    }
  }
};

void SwitchMidFrame(bool on_executor) {
  constexpr int kFrames = 180;   // 6 s at 30 fps
  constexpr double kHogMs = 300; // each frame the worker takes lasts this long and more
  // A frame that left before the answer may be sent this much later by its viewer's thread
  // (ctest runs two tests at once on two cores): such frames are not judged.
#if defined(VEIL_SANITIZED_BUILD)
  constexpr double kSlackMs = 200;
#else
  constexpr double kSlackMs = 100;
#endif
  static const Source src = LoadSource(kFrames, 30);  // both tests' publisher
  ASSERT_EQ(src.packets.size(), size_t(kFrames));
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  LiveSessionConfig cfg;
  cfg.privacy.mode = Mode::kBypass;
  cfg.bypass_forward = false;  // bypass frames are the worker's too: one can be in flight at the switch
  cfg.budget_ms = 5000;        // none dropped as stale behind the hog
  cfg.speed.enabled = false;
  std::shared_ptr<FrameExecutor> executor;
  if (on_executor) {
    executor = StartExecutor(2);
    ASSERT_TRUE(executor);
  }
  Rig rig("switch", cfg, executor);
  ASSERT_TRUE(rig.ok());
  Viewer viewer;
  ArrivalTap tap;
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", tap.sock.port()).ok());
  rig.session->InjectWorkerCpuMs(kHogMs);

  std::thread publisher([&] { Publish(*rig.tx, src, 0, kFrames); });
  const Mode order[] = {Mode::kFullBlur, Mode::kBypass, Mode::kFullBlur, Mode::kBypass, Mode::kFullBlur};
  struct Answer {
    Mode mode;
    double at_ms;
  };
  std::vector<Answer> answers;
  double waited_max = 0;
  Mode expect_previous = Mode::kBypass;
  for (Mode m : order) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    Mode previous{};
    const double t0 = RealtimeMs();
    const Status s = rig.session->SetMode(m, &previous);
    const double answered = RealtimeMs();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(previous, expect_previous);
    expect_previous = m;
    waited_max = std::max(waited_max, answered - t0);
    answers.push_back({m, answered});
  }
  publisher.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the last frame's hog and encode

  int judged_blur = 0, visible_blur = 0, frames_blur = 0, judged_bypass = 0, visible_bypass = 0, near_answer = 0;
  {
    std::lock_guard lk(viewer.mu), tk(tap.mu);
    for (const auto& [ts, out] : viewer.frames) {
      auto sent = tap.first_ms.find(ts);
      if (sent == tap.first_ms.end()) continue;
      Mode mode = Mode::kBypass;
      bool skip = false;
      for (const Answer& a : answers) {
        if (sent->second >= a.at_ms + kSlackMs) mode = a.mode;
        else if (sent->second >= a.at_ms) skip = true;  // could have left just before the answer
      }
      if (skip) {
        ++near_answer;
        continue;
      }
      const test::FaceVerdict v = test::JudgeFrame(clip, int(ts / 3000), test::LumaOf(*out));
      if (mode == Mode::kFullBlur) {
        ++frames_blur;
        judged_blur += v.judged;
        visible_blur += v.visible;
      } else {
        judged_bypass += v.judged;
        visible_bypass += v.visible;
      }
    }
    EXPECT_EQ(viewer.decode_errors, 0);
  }
  std::printf("switch mid-frame (%s): full_blur after the answer: %d frames, %d of %d faces visible; bypass %d of %d "
              "visible; %d frames left within %.0f ms after an answer; the longest switch call %.0f ms\n",
              on_executor ? "executor" : "own thread", frames_blur, visible_blur, judged_blur, visible_bypass,
              judged_bypass, near_answer, kSlackMs, waited_max);
  // ~10 full_blur frames with ~20 judged faces on an idle 2-core VM; fewer when other tests
  // share the cores (the hog is CPU time). Without the command 5-8 faces were visible here.
  EXPECT_GE(frames_blur, 4);
  EXPECT_GE(judged_blur, 6);
  EXPECT_EQ(visible_blur, 0) << "a face left after the switch to full_blur had answered";
  EXPECT_GE(judged_bypass, 6);
  EXPECT_GE(visible_bypass, judged_bypass * 9 / 10) << "the judge must see the faces bypass sends";
  EXPECT_EQ(rig.session->error(), "");
}

TEST(LiveSession, ASwitchCoversTheFrameInFlightWhenItAnswers) { SwitchMidFrame(false); }
TEST(LiveSession, ASwitchCoversTheFrameInFlightWhenItAnswersOnTheExecutor) { SwitchMidFrame(true); }

}  // namespace
}  // namespace veil
