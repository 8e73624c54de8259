// Test harness for the live server: the source clip's faces (from the clip's
// ground truth when it has one, else found once with YuNet; kept as luma
// crops), publishers that remember which source frame
// each RTP timestamp carried, and viewers that check every received frame
// against the source: faces whose detail survived (leaks) and whether the
// whole frame is a mosaic.
#pragma once
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "client/rtp_publisher.h"
#include "client/rtp_viewer.h"
#include "core/clock.h"
#include "eval/pixel_judge.h"
#include "face_check.h"
#include "ground_truth_clip.h"
#include "media/reader.h"
#include "server_process.h"
#include "vision/detector.h"
#include "vision/preprocess.h"

namespace veil::test {

struct SourceFace {
  cv::Rect roi;
  cv::Mat y;  // the source's luma over roi
};

struct SourceClip {
  ClipPtr clip;
  std::vector<std::vector<SourceFace>> faces;  // per frame
  std::vector<double> bg_grad;                 // per frame: InCellGradient away from the faces (-1: no background)
  int frames = 0;
  bool ground_truth = false;  // faces from the clip's annotations, judged by leakcheck's criterion
};

// Mean absolute horizontal luma step inside the cells of a whole-frame
// mosaic (cell `cell`, aligned at 0), outside `exclude` (the faces and what
// their masks may cover): near 0 when the frame is one, several grey levels
// for a picture. `share`: the sampled share of the frame outside `exclude`.
inline double InCellGradient(const Frame& f, int cell = 40, const std::vector<cv::Rect>& exclude = {},
                             double* share = nullptr) {
  double sum = 0;
  int n = 0, all = 0;
  std::vector<uint8_t> skip(size_t(f.width));
  for (int y = 0; y < f.height; y += 7) {
    std::fill(skip.begin(), skip.end(), 0);
    for (const cv::Rect& r : exclude)
      if (y >= r.y && y < r.y + r.height)
        for (int x = std::max(0, r.x); x < std::min(f.width, r.x + r.width); ++x) skip[size_t(x)] = 1;
    const uint8_t* row = f.y.data + size_t(y) * f.y.stride;
    for (int x = 0; x + 1 < f.width; ++x) {
      if ((x + 1) % cell == 0) continue;
      ++all;
      if (skip[size_t(x)] || skip[size_t(x) + 1]) continue;
      sum += std::abs(int(row[x + 1]) - int(row[x]));
      ++n;
    }
  }
  if (share) *share = all ? double(n) / all : 0;
  return n ? sum / n : 0;
}

// Each face grown 50% per side: what its mask may cover.
inline std::vector<cv::Rect> GrownFaces(const std::vector<SourceFace>& faces) {
  std::vector<cv::Rect> out;
  for (const SourceFace& sf : faces)
    out.push_back({sf.roi.x - sf.roi.width / 2, sf.roi.y - sf.roi.height / 2, 2 * sf.roi.width, 2 * sf.roi.height});
  return out;
}

// InCellGradient away from the faces, or -1 when under 15% of the frame lies outside them.
inline double BackgroundGradient(const Frame& f, const std::vector<SourceFace>& faces) {
  double share = 0;
  const double g = InCellGradient(f, 40, GrownFaces(faces), &share);
  return share < 0.15 ? -1 : g;
}

inline SourceClip LoadSourceClip(const std::string& path) {
  {
    SourceClip c;
    auto clip = LoadClip(path);
    EXPECT_TRUE(clip.ok()) << clip.error();
    if (clip.ok()) c.clip = *clip;
    // A clip rendered by leakcheck (media/leakcheck/) sits beside gt.csv: its faces of min side
    // >= 40 px are the ground truth, and veil's detector has no say in what is checked.
    const auto truth = LoadGroundTruthFaces(std::filesystem::path(path).parent_path().string(),
                                            std::numeric_limits<int>::max());
    c.ground_truth = !truth.empty();
    auto det = LoadDetector({});
    auto r = MediaReader::Open(path);
    EXPECT_TRUE(det.ok() && r.ok());
    if (!det.ok() || !r.ok()) return c;
    cv::Mat bgr;
    for (int index = 0;; ++index) {
      ReadItem it = (*r)->Next();
      if (std::holds_alternative<EndOfStream>(it)) break;
      auto* f = std::get_if<FramePtr>(&it);
      if (!f) {
        --index;
        continue;
      }
      const Frame& src = **f;
      std::vector<SourceFace> faces;
      if (!truth.empty()) {
        // gt.csv is in the master's 1280x720 pixels; a smaller rendering of it (input_360p.ivf)
        // scales the boxes. Faces of min side >= 40 px in the master are judged, whatever the size.
        const float k = float(src.width) / kGroundTruthWidth;
        if (auto t = truth.find(index); t != truth.end())
          for (const GtFace& g : t->second) {
            if (g.minside < 40) continue;
            const cv::Rect roi = ClipBox({g.x * k, g.y * k, g.w * k, g.h * k}, src.width, src.height);
            if (roi.width < 12) continue;
            faces.push_back({roi, LumaOf(src)(roi).clone()});
          }
        c.bg_grad.push_back(BackgroundGradient(src, faces));
        c.faces.push_back(std::move(faces));
        continue;
      }
      const cv::Size small = FitSize(src.width, src.height, {640, 360});
      DownscaleToBgr(src, small, bgr);
      auto res = (*det)->Detect({bgr}, 0.6f);
      if (res.ok())
        for (const auto& d : res->front()) {
          const Box b = d.box.Scaled(float(src.width) / small.width, float(src.height) / small.height);
          const cv::Rect roi = ClipBox(b, src.width, src.height);
          if (roi.width < 16) continue;
          faces.push_back({roi, LumaOf(src)(roi).clone()});
        }
      c.bg_grad.push_back(BackgroundGradient(src, faces));
      c.faces.push_back(std::move(faces));
    }
    c.frames = int(c.faces.size());
    return c;
  }
}

// A test clip with faces, and its faces, loaded once per clip. The default is
// the leakcheck clip (4 annotated photos, 12 s, 1280x720, a cut every 3 s):
// its faces are ground truth. Other clips' faces are YuNet's at 640x360, score >= 0.6.
inline const SourceClip& Source(const std::string& name = "leakcheck/input.ivf") {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<SourceClip>> cache;
  std::lock_guard lk(mu);
  auto& c = cache[name];
  if (!c) c = std::make_unique<SourceClip>(LoadSourceClip(Media(name)));
  return *c;
}

// RTP timestamp -> (source frame index, send time), filled by a Feed.
struct SentLog {
  std::mutex mu;
  std::map<uint32_t, std::pair<int, double>> sent;
  int count = 0;
};

// Publishes the source clip (looping) to a session's ingest ports.
class Feed {
 public:
  Feed(const json& session, std::shared_ptr<SentLog> log, double seconds = 0, const SourceClip& src = Source())
      : log_(std::move(log)) {
    PublisherConfig pc;
    pc.host = session["ingest"]["host"];
    pc.video_port = session["ingest"]["video_port"];
    pc.seconds = seconds;
    pc.audio_port = session["ingest"]["audio_port"];
    const int n = src.frames;
    auto p = RtpPublisher::Start(src.clip, pc, [l = log_, n](uint32_t ts, double ms) {
      std::lock_guard lk(l->mu);
      l->sent[ts] = {l->count++ % n, ms};
    });
    EXPECT_TRUE(p.ok()) << p.error();
    if (p.ok()) pub_ = std::move(*p);
  }
  void Stop() {
    if (pub_) pub_->Stop();
  }
  PublisherStats stats() const { return pub_ ? pub_->stats() : PublisherStats{}; }

 private:
  std::shared_ptr<SentLog> log_;
  std::unique_ptr<RtpPublisher> pub_;
};

struct FrameCheck {
  int index = -1;          // source frame
  double sent_ms = 0, arrival_ms = 0;
  int faces = 0, leaked = 0;
  double grad = 0;         // mean |dY/dx| inside 40 px cells: ~0 for a whole-frame mosaic
  bool close_up = false;   // the faces, grown 50% per side, cover half the frame: their masks may too
  // The same gradient away from the faces (outside each face grown 50% per side), in this frame
  // and in the source frame it came from: a clip with smooth pictures (the 360p leakcheck clip)
  // is told from a whole-frame mosaic by the ratio. src_bg_grad < 0: too little background.
  double bg_grad = 0, src_bg_grad = -1;
  bool Judgeable() const { return !close_up && src_bg_grad >= 0.1; }  // whether WholeFrameMosaic can tell
  bool WholeFrameMosaic() const { return bg_grad < 0.3 * src_bg_grad; }
};

// A viewer that decodes and checks every frame it receives.
class Watch {
 public:
  Watch(const std::string& codec, std::shared_ptr<SentLog> log, const SourceClip& src = Source())
      : log_(std::move(log)), src_(&src) {
    ViewerConfig vc;
    auto c = ParseVideoCodec(codec);
    EXPECT_TRUE(c.ok()) << c.error();
    vc.codec = c.ok() ? *c : VideoCodec::kVp8;
    vc.decode = true;
    vc.audio = false;
    auto v = RtpViewer::Start(vc, [this](const FramePtr& f, uint32_t ts, double arrival) { Check(*f, ts, arrival); });
    EXPECT_TRUE(v.ok()) << v.error();
    if (v.ok()) viewer_ = std::move(*v);
  }
  ~Watch() { viewer_.reset(); }  // no callback may run into the members below
  int port() const { return viewer_ ? viewer_->video_port() : 0; }
  std::vector<FrameCheck> checks() {
    std::lock_guard lk(mu_);
    return checks_;
  }
  void Close() { viewer_.reset(); }
  ViewerCounters counters() const { return viewer_ ? viewer_->counters() : ViewerCounters{}; }

 private:
  void Check(const Frame& f, uint32_t ts, double arrival) {
    FrameCheck c;
    {
      std::lock_guard lk(log_->mu);
      auto it = log_->sent.find(ts);
      if (it == log_->sent.end()) return;
      c.index = it->second.first;
      c.sent_ms = it->second.second;
    }
    c.arrival_ms = arrival;
    const auto& faces = src_->faces[size_t(c.index)];
    double grown_area = 0;
    for (const SourceFace& sf : faces) {
      ++c.faces;
      grown_area += 4.0 * sf.roi.area();
      const cv::Mat out = LumaOf(f)(sf.roi);
      if (src_->ground_truth)  // visible when any half keeps SSIM >= 0.91 (eval/pixel_judge.h)
        c.leaked += BestHalfSsim(sf.y, out, cv::Rect2d(0, 0, sf.roi.width, sf.roi.height)) >= kLeakSsim;
      else
        c.leaked += DetailCorrelation(sf.y, out) >= kLeakCorrelation;
    }
    c.grad = InCellGradient(f);
    c.close_up = grown_area >= 0.5 * f.width * f.height;
    if (size_t(c.index) < src_->bg_grad.size() && src_->bg_grad[size_t(c.index)] >= 0) {
      c.bg_grad = InCellGradient(f, 40, GrownFaces(faces));
      c.src_bg_grad = src_->bg_grad[size_t(c.index)];
    }
    std::lock_guard lk(mu_);
    checks_.push_back(c);
  }
  std::shared_ptr<SentLog> log_;
  const SourceClip* src_;
  std::unique_ptr<RtpViewer> viewer_;
  std::mutex mu_;
  std::vector<FrameCheck> checks_;
};

// Helpers of the tests that drive `veil serve` (server_test, failover_test).
inline void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline json CreateSession(ServerProcess& s, const json& body) {
  Reply r = s.CallJson("POST", "/v1/sessions", body);
  EXPECT_EQ(r.status, 201) << r.text;
  return r.body;
}

inline void AddViewer(ServerProcess& s, const std::string& id, int port) {
  Reply r = s.CallJson("POST", "/v1/sessions/" + id + "/viewers", json{{"host", "127.0.0.1"}, {"video_port", port}});
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_NE(r.body["sdp"].get<std::string>().find("m=video " + std::to_string(port) + " RTP/AVP 96"), std::string::npos);
}

struct Summary {
  int frames = 0, faces = 0, leaked = 0, mosaic = 0;
  int wide_frames = 0, wide_mosaic = 0;  // frames that are not close-ups, and those of them all mosaic
};

// In normal anonymize operation detection runs every 3rd frame, so a face
// that becomes detectable between detections (in the YuNet-judged sample clip:
// one emerging from smoke at frame ~277) shows for the frames until the next
// result; offline, `accuracy_test` bounds the same cadence misses (pixel leak
// <= 2.05% of face-frames on the eval clip). These tests allow that share and
// print every leak; a fault of the AI path (stall, failure) allows none.
#if !defined(VEIL_SANITIZED_BUILD)
constexpr double kCadenceLeakShare = 0.02;
#else
constexpr double kCadenceLeakShare = 0.05;  // 2-10x slower: results arrive more frames later
#endif
inline void ExpectOnlyCadenceLeaks(const Summary& s, const char* what) {
  EXPECT_LE(s.leaked, int(kCadenceLeakShare * s.faces)) << what << ": " << s.leaked << " of " << s.faces
                                                        << " faces left with their detail";
}
// Frames sent in [from, to) (NowMs clock). A frame is processed after it was
// sent, so every frame sent after a change took effect was processed under it,
// however slow the build.
// A whole-frame mosaic measures ~0.03 in-cell gradient after VP8; this clip's
// flattest pictures measure ~0.45.
inline Summary Summarize(const std::vector<FrameCheck>& cs, double from, double to, double mosaic_grad = 0.2) {
  Summary s;
  for (const FrameCheck& c : cs) {
    if (c.sent_ms < from || c.sent_ms >= to) continue;
    ++s.frames;
    s.faces += c.faces;
    s.leaked += c.leaked;
    s.mosaic += c.grad < mosaic_grad;
    if (!c.close_up) {
      ++s.wide_frames;
      s.wide_mosaic += c.grad < mosaic_grad;
    }
  }
  return s;
}

}  // namespace veil::test
