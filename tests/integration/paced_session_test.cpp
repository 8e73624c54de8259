// The session manager and live sessions under concurrent media and control, paced slowly enough
// for a sanitizer build: this is the test ThreadSanitizer runs (ctest --preset tsan, which skips
// the realtime label), and ASan+UBSan in CI (scripts/sanitize.sh).
//
// Two RTP publishers send a real VP8 clip at 10 fps while other threads, all at once: switch
// privacy modes, add and remove RTP viewers, read sessions, stats, snapshots, history and
// events, and finally delete a session while its media still flow and create a new one under the
// same id. Nothing here asserts a frame rate: it asserts that every call answers as the API
// documents, that frames flow through both sessions, and that everything is gone at the end. A
// data race, a use after free or a deadlock is what a sanitizer (or the timeout) turns into a
// failure.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "media/demuxer.h"
#include "server/ai_wiring.h"
#include "server/session_manager.h"
#include "test_util.h"
#include "transport/net/udp.h"
#include "transport/rtp/rtp_sender.h"

namespace veil {
namespace {

using namespace std::chrono_literals;

std::vector<EncodedFrame> LoadPackets(int n) {
  std::vector<EncodedFrame> out;
  auto d = Demuxer::Open(test::Media("sample_720p30.ivf"));
  EXPECT_TRUE(d.ok()) << d.error();
  if (!d.ok()) return out;
  auto all = (*d)->ReadAll();
  EXPECT_TRUE(all.ok());
  if (!all.ok()) return out;
  for (auto& p : *all) {
    if (p.audio) continue;
    EncodedFrame f;
    f.data = std::move(p.data);
    f.keyframe = p.keyframe;
    out.push_back(std::move(f));
    if (int(out.size()) == n) break;
  }
  return out;
}

// Sends the clip to `port` at 10 fps (a keyframe first) until `stop`; returns the frames sent.
int Publish(const std::vector<EncodedFrame>& pk, int port, const std::atomic<bool>& stop) {
  auto tx = RtpSender::Start({});
  EXPECT_TRUE(tx.ok());
  if (!tx.ok() || !(*tx)->AddViewer("127.0.0.1", port).ok()) return 0;
  int sent = 0;
  const double t0 = NowMs();
  while (!stop) {
    const double due = t0 + sent * 100.0;
    while (NowMs() < due && !stop) std::this_thread::sleep_for(2ms);
    if (!(*tx)->Send(pk[size_t(sent) % pk.size()], uint32_t(sent * 3000)).ok()) break;
    ++sent;
  }
  return sent;
}

CreateSpec Spec(const std::string& id) {
  CreateSpec c;
  c.id = id;
  return c;
}

TEST(PacedSessions, ConcurrentControlAndMediaStayConsistent) {
  // The clip's first 20 frames, looped: a keyframe every 2 s at 10 fps, so that a session whose
  // first keyframe a slow (sanitized) receiver lost starts soon after.
  const std::vector<EncodedFrame> pk = LoadPackets(20);
  ASSERT_EQ(pk.size(), 20u);
  ASSERT_TRUE(pk.front().keyframe);
  MetricsRegistry metrics;
  ServerDeps deps;
  deps.server.publisher_timeout_ms = 10000;
  deps.server.start_timeout_ms = 10000;
  // A fixed cap: this test is about concurrent control calls, not capacity (under a sanitizer
  // the learned cost of one session fills the 2-core budget and the re-created p2 would be refused).
  deps.server.max_sessions = 8;
  // No load shedding either: a sanitized session is late at every level, and the node would
  // rightly refuse the viewers this test adds (server_test checks the shedding order).
  deps.server.shed = false;
  auto parts = StartServerParts(deps, &metrics);
  ASSERT_TRUE(parts.ok()) << parts.error();
  auto mgr = SessionManager::Start(deps, &metrics, std::move(*parts));
  ASSERT_TRUE(mgr.ok()) << mgr.error();
  SessionManager& m = **mgr;

  SessionInfo a, b;
  ASSERT_TRUE(m.Create(Spec("p1"), "test", &a).ok()) << "create p1";
  ASSERT_TRUE(m.Create(Spec("p2"), "test", &b).ok()) << "create p2";
  std::atomic<bool> stop_media{false}, stop_control{false};
  std::atomic<int> sent1{0}, sent2{0}, api_errors{0}, calls{0}, gap_404{0};
  // p2 is deleted and created again below: a call on p2 that starts before the new one exists may
  // get 404 (and only that); anything else is an error.
  std::atomic<double> gap_from{1e300}, gap_to{1e300};
  auto check = [&](const char* id, const Status& e, double started) {
    if (e.ok()) return;
    if (std::string(id) == "p2" && e.code() == StatusCode::kNotFound && NowMs() >= gap_from.load() && started <= gap_to.load()) {
      ++gap_404;
      return;
    }
    ++api_errors;
    ADD_FAILURE() << id << ": " << StatusCodeName(e.code()) << " " << e.message();
  };
  std::thread pub1([&] { sent1 = Publish(pk, a.video_port, stop_media); });
  std::thread pub2([&] { sent2 = Publish(pk, b.video_port, stop_media); });

  // Mode switches on both sessions.
  std::thread modes([&] {
    const char* order[] = {"bypass", "full_blur", "anonymize"};
    for (int i = 0; !stop_control; ++i) {
      Mode prev;
      const char* id = i % 2 ? "p1" : "p2";
      const double t = NowMs();
      check(id, m.SetMode(id, order[i % 3], "test", &prev), t);
      ++calls;
      std::this_thread::sleep_for(150ms);
    }
  });
  // RTP viewers come and go on p1 (ports of sockets this thread holds open, so nothing else takes them).
  std::thread viewers([&] {
    std::vector<UdpSocket> socks;
    for (int i = 0; i < 3; ++i) {
      auto s = UdpSocket::Bind("127.0.0.1", 0);
      ASSERT_TRUE(s.ok());
      socks.push_back(std::move(*s));
    }
    for (int i = 0; !stop_control; ++i) {
      ViewerInfo v;
      const Status e = m.AddViewer("p1", "127.0.0.1", socks[size_t(i) % 3].port(), 0, "test", &v);
      check("p1", e, 0);
      if (e.ok()) {
        std::this_thread::sleep_for(200ms);
        check("p1", m.RemoveViewer("p1", v.id, "test"), 0);
      }
      calls += 2;
    }
  });
  // Readers: what the API and the operator page read, as fast as they can.
  std::thread readers([&] {
    uint64_t seq = 0;
    while (!stop_control) {
      for (const char* id : {"p1", "p2"}) {
        const double t = NowMs();
        SessionInfo s;
        check(id, m.Get(id, &s), t);
        SessionSnapshot snap;
        const Status e = m.Snapshot(id, 160, &snap);
        if (e.code() != StatusCode::kUnavailable) check(id, e, t);  // no frame has left (the new p2) yet
        std::vector<HistoryPoint> h;
        check(id, m.History(id, &h), t);
        calls += 3;
      }
      for (const Event& ev : m.Events(seq)) seq = ev.seq;
      (void)m.List();
      calls += 2;
      std::this_thread::sleep_for(5ms);
    }
  });

  std::this_thread::sleep_for(6s);
  // Delete p2 while its publisher still sends, and take the id again at once (a new session
  // under the id of one being torn down: its metric series must stay its own).
  gap_from = NowMs();
  ASSERT_TRUE(m.Delete("p2", "test").ok());
  SessionInfo again;
  const Status re = m.Create(Spec("p2"), "test", &again);
  gap_to = NowMs();
  EXPECT_TRUE(re.ok()) << re.message();
  std::this_thread::sleep_for(2s);
  stop_control = true;
  modes.join();
  viewers.join();
  readers.join();
  stop_media = true;
  pub1.join();
  pub2.join();

  SessionInfo s1;
  const Status gone = m.Get("p1", &s1);
  if (!gone.ok()) {
    std::string why;
    for (const Event& e : m.Events(0))
      if (e.session == "p1") why += e.type + " " + e.detail + "; ";
    FAIL() << "p1 ended: " << why;
  }
  std::printf("paced sessions: p1 sent %d, in %llu, out %llu; p2 sent %d; %d control calls, %d errors, "
              "%d 404s on p2 while it was re-created\n", sent1.load(), (unsigned long long)s1.stats.frames_in,
              (unsigned long long)s1.stats.frames_out, sent2.load(), calls.load(), api_errors.load(), gap_404.load());
  EXPECT_EQ(api_errors.load(), 0);
  EXPECT_GT(calls.load(), 100);
  EXPECT_GE(sent1.load(), 40);
  EXPECT_GT(s1.stats.frames_in, 0u) << "no frame reached p1";
  EXPECT_GT(s1.stats.frames_out, 0u) << "no frame left p1";
  EXPECT_NE(metrics.ExportText().find("veil_session_frames_received_total{session=\"p2\""), std::string::npos)
      << "the new p2 has its own series";
  EXPECT_TRUE(m.Delete("p1", "test").ok());
  EXPECT_TRUE(m.Delete("p2", "test").ok());
  EXPECT_TRUE(m.List().empty());
}

}  // namespace
}  // namespace veil
