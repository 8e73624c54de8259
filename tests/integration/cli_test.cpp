// Black-box tests of the veil binary on generated media.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <fstream>
#include <sstream>

#include <opencv2/imgproc.hpp>
#include <variant>

#include "media/reader.h"
#include "face_check.h"
#include "ground_truth_clip.h"
#include "test_util.h"
#include "vision/detector.h"
#include "vision/preprocess.h"

namespace veil {
namespace {
using test::Media;
using test::RunVeil;

nlohmann::json JsonTail(const std::string& out) {
  const auto p = out.find('{');
  EXPECT_NE(p, std::string::npos) << out;
  return nlohmann::json::parse(out.substr(p));
}

struct FaceCheck {
  int source_faces = 0;   // faces YuNet finds in the source frames
  int kept_detail = 0;    // of those, how many keep their detail in the output
  int frames_checked = 0;
};


// For every `step`-th frame: find faces in the source, then check the same
// region of the output has lost the face's detail.
FaceCheck CheckFacesPixelated(const std::string& src, const std::string& out, int step, float score) {
  auto d = LoadDetector({});
  auto a = MediaReader::Open(src), b = MediaReader::Open(out);
  EXPECT_TRUE(d.ok() && a.ok() && b.ok());
  FaceCheck c;
  cv::Mat bgr;
  for (;;) {
    ReadItem ia = (*a)->Next(), ib = (*b)->Next();
    while (std::holds_alternative<PassthroughPacket>(ia)) ia = (*a)->Next();
    while (std::holds_alternative<PassthroughPacket>(ib)) ib = (*b)->Next();
    auto* fa = std::get_if<FramePtr>(&ia);
    auto* fb = std::get_if<FramePtr>(&ib);
    if (!fa || !fb) break;
    if ((*fa)->index % step) continue;
    ++c.frames_checked;
    const cv::Size small = FitSize((*fa)->width, (*fa)->height, {640, 360});
    DownscaleToBgr(**fa, small, bgr);
    auto res = (*d)->Detect({bgr}, score);
    if (!res.ok()) continue;
    const float sx = float((*fa)->width) / small.width;
    for (const auto& det : res->front()) {
      const Box box = det.box.Scaled(sx, sx);
      ++c.source_faces;
      const double corr = test::DetailCorrelation(**fa, **fb, box);
      if (std::getenv("VEIL_TEST_VERBOSE"))
        std::fprintf(stderr, "frame %lld face %.0f,%.0f %.0fx%.0f detail correlation %.3f\n",
                     (long long)(*fa)->index, box.x, box.y, box.w, box.h, corr);
      c.kept_detail += corr >= test::kLeakCorrelation;
    }
  }
  return c;
}

TEST(Cli, AnonymizePixelatesEveryFaceTheSourceShows) {
  const std::string out = test::TempPath("anon.webm");
  auto r = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + out + " --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = JsonTail(r.out);
  EXPECT_EQ(j["frames"], 300);
  EXPECT_EQ(j["fail_closed_frames"], 0);
  EXPECT_GT(j["detections_run"].get<int>(), 90);
  for (const char* s : {"decode", "detect", "track", "mosaic", "encode"}) EXPECT_TRUE(j["stages"].contains(s));
  const FaceCheck c = CheckFacesPixelated(Media("sample_720p30.ivf"), out, 3, 0.5f);
  EXPECT_EQ(c.frames_checked, 100);
  EXPECT_GE(c.source_faces, 60) << "the sample should show faces in most frames";
  EXPECT_EQ(c.kept_detail, 0) << "faces not pixelated in the output";
  std::filesystem::remove(out);
}

// Judges every 3rd frame of `out` (the leakcheck clip after `veil anonymize`) against the clip's
// ground truth: annotated faces at known positions, leakcheck's criterion, no detector.
struct GtTally {
  int frames = 0, judged = 0, visible = 0, clear_judged = 0, clear_visible = 0;
};
GtTally JudgeAgainstGroundTruth(const test::GroundTruthClip& clip, const std::string& out) {
  GtTally t;
  auto r = MediaReader::Open(out);
  EXPECT_TRUE(r.ok()) << r.error();
  if (!r.ok()) return t;
  for (int i = 0;; ++i) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    auto* f = std::get_if<FramePtr>(&it);
    if (!f || i % 3 || i >= int(clip.master.size())) continue;
    const cv::Mat y((*f)->height, (*f)->width, CV_8UC1, (*f)->y.data, size_t((*f)->y.stride));
    ++t.frames;
    const test::FaceVerdict v = test::JudgeFrame(clip, i, y);
    t.judged += v.judged;
    t.visible += v.visible;
    t.clear_judged += v.clear_judged;
    t.clear_visible += v.clear_visible;
  }
  return t;
}

// The privacy claim of `veil anonymize` judged by ground truth, not by veil's detector: the clip
// rendered by ../shared/tools/leakcheck from annotated photos veil never saw (12 s, hard cuts
// every 3 s). Bypass is the control: the same judge must see the faces there.
TEST(Cli, AnonymizeLeavesNoClearFaceVisibleByGroundTruth) {
  const std::string dir = Media("leakcheck");
  const test::GroundTruthClip clip = test::LoadGroundTruthClip(dir, 360);
  ASSERT_TRUE(clip.ok()) << dir << ": scripts/make-test-media.sh makes it";
  const std::string out = test::TempPath("gt.ivf");
  auto r = RunVeil("anonymize " + dir + "/input.ivf -o " + out + " --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const GtTally a = JudgeAgainstGroundTruth(clip, out);
  std::printf("ground truth, anonymize: %d frames, %d faces judged (%d clear), %d visible (%d clear)\n", a.frames,
              a.judged, a.clear_judged, a.visible, a.clear_visible);
  EXPECT_EQ(a.frames, 120);
  EXPECT_GT(a.clear_judged, 60);
  EXPECT_EQ(a.clear_visible, 0) << "a clear face left visible";
  EXPECT_LE(a.visible, a.judged / 20) << "more than 5% of the faces visible";
  r = RunVeil("anonymize " + dir + "/input.ivf -o " + out + " --mode bypass");
  ASSERT_EQ(r.rc, 0) << r.out;
  const GtTally b = JudgeAgainstGroundTruth(clip, out);
  std::printf("ground truth, bypass: %d faces judged, %d visible\n", b.judged, b.visible);
  EXPECT_GE(b.visible, b.judged * 8 / 10) << "the judge must see the faces a plain re-encode keeps";
  std::filesystem::remove(out);
}

// `--masks-csv` says what was pixelated, and the pixels agree: leakcheck's over-blur criterion
// (local SSIM < 0.3 against the lossless master, on textured pixels) finds the destroyed pixels
// of the output inside the listed rectangles, and the listed rectangles destroyed.
TEST(Cli, MasksCsvListsWhatThePixelsShowIsPixelated) {
  const std::string dir = Media("leakcheck");
  const test::GroundTruthClip clip = test::LoadGroundTruthClip(dir, 90);
  ASSERT_TRUE(clip.ok()) << dir << ": scripts/make-test-media.sh makes it";
  const std::string out = test::TempPath("masks.ivf"), csv = test::TempPath("masks.csv");
  auto r = RunVeil("anonymize " + dir + "/input.ivf -o " + out + " --max-frames 90 --masks-csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line,
            "frame,x,y,w,h,kind,confirmed,core_x,core_y,core_w,core_h,grown_x,grown_y,grown_w,grown_h,"
            "round_cx,round_cy,round_ix,round_iy,round_rx,round_ry");
  // Each row's pixels: its rectangle, less the rounded corners its round_* columns describe.
  struct Listed {
    cv::Rect rect;
    bool round = false;
    double cx = 0, cy = 0, ix = 0, iy = 0, rx = 0, ry = 0;
  };
  std::map<int, std::vector<Listed>> rects;
  int rows = 0, whole = 0, coasting = 0, round = 0;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string v[21];
    for (auto& x : v) std::getline(ss, x, ',');
    ASSERT_TRUE(v[5] == "matched" || v[5] == "coasting" || v[5] == "whole_frame") << line;
    const cv::Rect b(std::stoi(v[1]), std::stoi(v[2]), std::stoi(v[3]), std::stoi(v[4]));
    if (v[5] == "whole_frame") {
      ++whole;
      EXPECT_EQ(b, cv::Rect(0, 0, 1280, 720)) << line;
      EXPECT_TRUE(v[6].empty() && v[7].empty()) << line;
    } else {
      coasting += v[5] == "coasting";
      EXPECT_TRUE(v[6] == "0" || v[6] == "1") << line;
      const cv::Rect core(std::stoi(v[7]), std::stoi(v[8]), std::stoi(v[9]), std::stoi(v[10]));
      const cv::Rect grown(std::stoi(v[11]), std::stoi(v[12]), std::stoi(v[13]), std::stoi(v[14]));
      EXPECT_EQ(grown & core, core & cv::Rect(0, 0, 1280, 720)) << "the grown box holds the core: " << line;
    }
    Listed l{b};
    if (!v[15].empty()) {
      l.round = true;
      ++round;
      l.cx = std::stod(v[15]), l.cy = std::stod(v[16]), l.ix = std::stod(v[17]), l.iy = std::stod(v[18]);
      l.rx = std::stod(v[19]), l.ry = std::stod(v[20]);
      EXPECT_TRUE(l.rx > 0 && l.ry > 0) << line;
    }
    rects[std::stoi(v[0])].push_back(l);
    ++rows;
  }
  std::printf("masks.csv: %d rows in %zu frames (%d whole-frame, %d coasting, %d round)\n", rows, rects.size(), whole,
              coasting, round);
  EXPECT_GT(round, 0) << "face masks are round by default";
  EXPECT_GE(rects.size(), 80u) << "the clip has faces in every shot";
  auto rd = MediaReader::Open(out);
  ASSERT_TRUE(rd.ok()) << rd.error();
  int64_t inside = 0, inside_destroyed = 0, destroyed = 0, destroyed_outside = 0;
  for (int i = 0; i < 90; ++i) {
    ReadItem it = (*rd)->Next();
    ASSERT_FALSE(std::holds_alternative<EndOfStream>(it)) << "frame " << i;
    auto* f = std::get_if<FramePtr>(&it);
    ASSERT_TRUE(f);
    if (i % 3) continue;
    const cv::Mat y((*f)->height, (*f)->width, CV_8UC1, (*f)->y.data, size_t((*f)->y.stride));
    const FrameJudgement j = JudgeFrame(clip.master[size_t(i)], y, {});  // every textured pixel judged
    cv::Mat listed(y.size(), CV_8U, cv::Scalar(0)), near(y.size(), CV_8U, cv::Scalar(0));
    for (const Listed& l : rects[i]) {
      const cv::Rect b = l.rect;
      const cv::Rect c = b & cv::Rect(0, 0, y.cols, y.rows);
      for (int yy = c.y; yy < c.y + c.height; ++yy)
        for (int xx = c.x; xx < c.x + c.width; ++xx) {
          const double dx = std::max(0.0, std::abs(xx + 0.5 - l.cx) - l.ix);
          const double dy = std::max(0.0, std::abs(yy + 0.5 - l.cy) - l.iy);
          if (!l.round || (dx / l.rx) * (dx / l.rx) + (dy / l.ry) * (dy / l.ry) <= 1.0) listed.at<uint8_t>(yy, xx) = 255;
        }
    }
    // the SSIM window (11x11) reaches 5 px past a mosaic's edge; cells may round 2 px more
    cv::dilate(listed, near, cv::getStructuringElement(cv::MORPH_RECT, {17, 17}));
    cv::Mat textured;  // the judge's denominator with no faces: destroyed or not, local std >= 10
    cv::Mat m32, m2, mu;
    clip.master[size_t(i)].convertTo(m32, CV_32F);
    cv::GaussianBlur(m32, mu, {11, 11}, 1.5);
    cv::GaussianBlur(m32.mul(m32), m2, {11, 11}, 1.5);
    textured = (m2 - mu.mul(mu)) >= float(kTextureStd * kTextureStd);
    destroyed += cv::countNonZero(j.destroyed);
    destroyed_outside += cv::countNonZero(j.destroyed & ~near);
    inside += cv::countNonZero(textured & listed);
    inside_destroyed += cv::countNonZero(j.destroyed & listed);
  }
  std::printf("destroyed pixels %lld, outside the listed masks %lld; textured pixels inside %lld, destroyed %lld\n",
              (long long)destroyed, (long long)destroyed_outside, (long long)inside, (long long)inside_destroyed);
  EXPECT_GT(destroyed, 0);
  EXPECT_LE(destroyed_outside, destroyed / 100) << "pixels destroyed where the CSV lists no mask";
  EXPECT_GE(inside_destroyed, inside * 6 / 10) << "listed masks that the output did not pixelate";
  std::filesystem::remove(out);
  std::filesystem::remove(csv);
}

TEST(Cli, WritesPrometheusMetricsFile) {
  const std::string out = test::TempPath("m.ivf"), prom = test::TempPath("veil.prom");
  auto r = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + out + " --max-frames 30 --metrics-file " + prom);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(prom);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string t = ss.str();
  EXPECT_NE(t.find("# TYPE veil_stage_latency_seconds histogram"), std::string::npos) << t;
  EXPECT_NE(t.find("stage=\"detect\",le=\"+Inf\"} 30"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_frames_total{input=\"" + Media("sample_720p30.ivf") + "\"} 30"), std::string::npos) << t;
  EXPECT_NE(t.find("veil_fail_closed_frames_total"), std::string::npos);
  const test::RunResult lint = test::PromtoolCheck(t);
  EXPECT_EQ(lint.rc, 0) << lint.out;
  EXPECT_EQ(lint.out, "") << "promtool check metrics on the metrics file";
  std::filesystem::remove(out);
  std::filesystem::remove(prom);
}

// veil bench --speed-steps: every step of the live VP8 encoder's ladder on a real clip, the
// decoded output against the input. Faster steps lose quality at the same bitrate (the libvpx
// figures the issue quoted: 44.8 dB at cpu-used -8, 39.3 at -16; the last step is now cpu-used
// -14 static 3000, 40.3 dB on the whole clip); the bitrate holds its target.
TEST(Cli, BenchSpeedStepsMeasuresEveryStep) {
  auto r = RunVeil("bench --speed-steps " + Media("sample_720p30.ivf") + " --max-frames 60 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const auto& steps = j["steps"];
  ASSERT_EQ(steps.size(), 5u) << r.out;
  EXPECT_EQ(steps[0]["setting"], "cpu-used -8");
  EXPECT_EQ(steps[4]["setting"], "cpu-used -14 static 3000");
  for (const auto& s : steps) {
    EXPECT_EQ(s["frames"], 60);
    EXPECT_GT(s["psnr_y"].get<double>(), 33.0) << s.dump();
    EXPECT_NEAR(s["kbps"].get<double>(), 2513, 2513 * 0.3) << s.dump();  // 1280x720x30 / 11000
  }
  EXPECT_GT(steps[0]["psnr_y"].get<double>(), 40.0);
  EXPECT_GT(steps[0]["psnr_y"].get<double>(), steps[4]["psnr_y"].get<double>() + 1.0);
  EXPECT_NE(RunVeil("bench --speed-steps /nonexistent.ivf").rc, 0);
}

// veil bench --compare-fast-cuts: encoder.fast_cuts off and on, fed the same frames. The clip is
// leakcheck's rendering (3 s per photo at 30 fps), so its cuts are known: frames 90 and 180 of the
// first 200, and nothing else is one (a slow pan over each photo). The speed-up is the
// benchmark's to show, not this test's; here: the right frames, and no quality lost on them.
TEST(Cli, BenchCompareFastCutsFindsTheClipsCuts) {
  auto r = RunVeil("bench --compare-fast-cuts " + Media("leakcheck/input.ivf") + " --max-frames 200 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const auto& rows = j["rows"];
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[0]["fast_cuts"], false);
  EXPECT_EQ(rows[1]["fast_cuts"], true);
  for (const auto& row : rows) {
    EXPECT_EQ(row["frames"], 200);
    EXPECT_EQ(row["cut_indices"], nlohmann::json::array({90, 180})) << row.dump();
    EXPECT_GT(row["psnr_y"].get<double>(), 40.0) << row.dump();
    EXPECT_GT(row["cut_encode_cpu_ms"].get<double>(), 0.0);
  }
  // Two frames of 200 at another speed: the clip's quality within 0.3 dB, its bitrate within 5%.
  EXPECT_NEAR(rows[1]["psnr_y"].get<double>(), rows[0]["psnr_y"].get<double>(), 0.3);
  EXPECT_NEAR(rows[1]["kbps"].get<double>(), rows[0]["kbps"].get<double>(), rows[0]["kbps"].get<double>() * 0.05);
  EXPECT_EQ(RunVeil("bench --compare-fast-cuts " + Media("sample_720p30_h264.mkv") + " --set encoder.codec=h264").rc, 2);
}

// veil bench --compare-encoder-paths: FFmpeg's libvpx encoder (the file writer's, so `veil
// bench`'s standalone transcode) and veil's own libvpx encoder as a live session opens it (a 90
// kHz time base and RTP timestamps) are the same encoder at the same settings: the same bitrate
// and quality to rounding on the same frames (vpx_encoder.cpp's claim; issue 12 compares a
// live session's CPU with that transcode). Their CPU is the benchmark's to show, not this test's.
TEST(Cli, BenchCompareEncoderPathsFindsTheLiveEncoderLikeTheWriters) {
  for (const std::string& codec : {std::string("vp8"), std::string("h264")}) {
    const std::string clip = Media(codec == "vp8" ? "sample_720p30.ivf" : "sample_720p30_h264.mkv");
    auto r = RunVeil("bench --compare-encoder-paths " + clip + " --set encoder.codec=" + codec + " --max-frames 45 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    const auto& rows = j["rows"];
    ASSERT_EQ(rows.size(), 4u) << r.out;
    const double kbps = rows[0]["kbps"].get<double>(), psnr = rows[0]["psnr_y"].get<double>();
    EXPECT_NEAR(kbps, 2513, 2513 * 0.3) << rows[0].dump();  // 1280x720x30 / 11000
    EXPECT_GT(psnr, 36.0) << rows[0].dump();
    for (const auto& row : rows) {
      EXPECT_EQ(row["frames"], 45) << row.dump();
      EXPECT_GT(row["encode_cpu_ms"].get<double>(), 0.0) << row.dump();
      EXPECT_NEAR(row["psnr_y"].get<double>(), psnr, 0.3) << codec << " " << row.dump();
      EXPECT_NEAR(row["kbps"].get<double>(), kbps, kbps * 0.05) << codec << " " << row.dump();
    }
  }
  EXPECT_NE(RunVeil("bench --compare-encoder-paths /nonexistent.ivf").rc, 0);
}

TEST(Cli, FullBlurAndBypassModes) {
  const std::string out = test::TempPath("blur.ivf");
  auto r = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + out + " --mode full_blur --max-frames 90");
  ASSERT_EQ(r.rc, 0) << r.out;
  FaceCheck blur = CheckFacesPixelated(Media("sample_720p30.ivf"), out, 3, 0.5f);
  EXPECT_GT(blur.source_faces, 10);
  EXPECT_EQ(blur.kept_detail, 0);
  r = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + out + " --mode bypass --max-frames 90");
  ASSERT_EQ(r.rc, 0) << r.out;
  FaceCheck bypass = CheckFacesPixelated(Media("sample_720p30.ivf"), out, 3, 0.5f);
  EXPECT_EQ(bypass.kept_detail, bypass.source_faces);  // the check itself can tell a face from a mosaic
  std::filesystem::remove(out);
}

TEST(Cli, H264WithAudioToMp4) {
  const std::string out = test::TempPath("h264.mp4");
  auto r = RunVeil("anonymize " + Media("sample_h264_aac.mp4") + " -o " + out + " --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = JsonTail(r.out);
  EXPECT_EQ(j["output"]["codec"], "h264");
  EXPECT_EQ(j["audio"]["copied"], 1);
  EXPECT_GT(j["audio"]["packets"].get<int>(), 50);
  std::filesystem::remove(out);
}

TEST(Cli, DamagedInputWritesRecoveredFramesAndExitsNonZero) {
  for (const char* name : {"truncated.ivf", "corrupt.ivf"}) {
    const std::string out = test::TempPath(std::string(name) + ".ivf");
    auto r = RunVeil("anonymize " + Media(name) + " -o " + out + " --mode full_blur");
    EXPECT_EQ(r.rc, 3) << r.out;
    EXPECT_NE(r.out.find("damaged"), std::string::npos) << r.out;
    auto rd = MediaReader::Open(out);
    ASSERT_TRUE(rd.ok()) << "output not readable: " << rd.error();
    int frames = 0;
    while (!std::holds_alternative<EndOfStream>((*rd)->Next())) ++frames;
    EXPECT_GT(frames, 100);
    std::filesystem::remove(out);
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> PartialFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".partial") != std::string::npos) out.push_back(e.path().string());
  return out;
}

// Issue 13: `veil anonymize in.ivf -o in.ivf` truncated its input to 21 KB (exit 3), and a failed
// or killed run left a partial file that still played under the output's name.
TEST(Cli, OutputIsNeverTheInputAndOnlyAFinishedFileTakesItsName) {
  const std::string dir = test::TempPath("safe-output");
  std::filesystem::create_directories(dir);
  const std::string in = dir + "/in.ivf";
  std::filesystem::copy_file(Media("sample_360p30.ivf"), in, std::filesystem::copy_options::overwrite_existing);
  const std::string original = ReadAll(in);
  std::filesystem::create_hard_link(in, dir + "/same.ivf");
  for (const std::string& o : {in, dir + "/./in.ivf", dir + "/same.ivf"}) {
    auto r = RunVeil("anonymize " + in + " -o " + o + " --mode full_blur");
    EXPECT_NE(r.rc, 0) << o;
    EXPECT_LT(r.rc, 128) << r.out;
    EXPECT_NE(r.out.find("the output is the input"), std::string::npos) << r.out;
    EXPECT_TRUE(ReadAll(in) == original) << "the input was changed through " << o;
  }
  // A run killed part-way leaves the previous output as it was.
  const std::string out = dir + "/out.ivf";
  { std::ofstream(out) << "previous output"; }
  auto k = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + out + " --detect-every 1", "timeout -s KILL 1.5 ");
  EXPECT_EQ(k.rc, 137) << "the run should have been killed part-way: " << k.out;
  EXPECT_EQ(ReadAll(out), "previous output");
  for (const auto& p : PartialFiles(dir)) std::filesystem::remove(p);  // SIGKILL leaves its hidden partial file
  // A run that fails leaves no file behind; a finished one takes the output's name and leaves nothing else.
  auto bad = RunVeil("anonymize " + Media("sample_720p30.ivf") + " -o " + dir + "/x.avi");
  EXPECT_NE(bad.rc, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.avi"));
  auto ok = RunVeil("anonymize " + in + " -o " + out + " --mode full_blur");
  ASSERT_EQ(ok.rc, 0) << ok.out;
  auto rd = MediaReader::Open(out);
  ASSERT_TRUE(rd.ok()) << rd.error();
  EXPECT_TRUE(PartialFiles(dir).empty());
  EXPECT_TRUE(ReadAll(in) == original);
  std::filesystem::remove_all(dir);
}

// Issue 13: avformat_open_input had no protocol whitelist: an input (or a playlist inside a
// file) could make veil fetch URLs. Inputs are local files only; the server here counts what
// veil asked of it.
TEST(Cli, InputsAreLocalFilesOnly) {
  httplib::Server web;
  std::atomic<int> asked{0};
  const std::string clip = ReadAll(Media("sample_360p30.ivf"));
  web.Get("/clip.ivf", [&](const httplib::Request&, httplib::Response& res) {
    ++asked;
    res.set_content(clip, "video/x-ivf");
  });
  const int port = web.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { web.listen_after_bind(); });
  const std::string dir = test::TempPath("local-only");
  std::filesystem::create_directories(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/clip.ivf";
  { std::ofstream(dir + "/list.m3u8") << "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:9,\n" << url << "\n#EXT-X-ENDLIST\n"; }
  for (const std::string& in : {url, dir + "/list.m3u8"}) {
    auto r = RunVeil("anonymize " + in + " -o " + dir + "/out.ivf --mode full_blur");
    EXPECT_NE(r.rc, 0) << in << "\n" << r.out;
    EXPECT_LT(r.rc, 128) << r.out;
  }
  web.stop();
  serving.join();
  EXPECT_EQ(asked.load(), 0) << "veil fetched a URL";
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.ivf"));
  std::filesystem::remove_all(dir);
}

TEST(Cli, BadInputsAreClearErrors) {
  const std::string out = test::TempPath("bad.ivf");
  const std::string in = Media("sample_720p30.ivf");
  struct Case {
    std::string args, expect;
    int rc;
  };
  const std::vector<Case> cases = {
      {"anonymize " + Media("garbage.mp4") + " -o " + out, "cannot open", 1},
      {"anonymize " + Media("not_video.ivf") + " -o " + out, "cannot open", 1},
      {"anonymize /nonexistent.ivf -o " + out, "cannot open", 1},
      {"anonymize " + in + " -o " + out + " --detect-size 0x0", "detect size", 2},
      {"anonymize " + in + " -o " + out + " --detect-size big", "WxH", 2},
      {"anonymize " + in + " -o " + out + " --cell 0", "degenerate", 2},
      {"anonymize " + in + " -o " + out + " --min-cell 1", "min_cell", 2},
      {"anonymize " + in + " -o " + out + " --detect-every -3", "detect-every", 2},
      {"anonymize " + in + " -o " + out + " --detect-every 60", "fail closed", 2},
      {"anonymize " + in + " -o " + out + " --margin 50", "margin", 2},
      {"anonymize " + in + " -o " + out + " --score 0.2 --low-score 0.5", "low_score", 2},
      {"anonymize " + in + " -o " + out + " --model /nonexistent.onnx", "not found", 2},
      {"anonymize " + in + " -o " + out + " --model " + Media("sample.y4m"), "sha256", 2},
      {"anonymize " + in + " -o /tmp/x.avi", "output format", 1},
      {"anonymize " + in + " -o " + out + " --mode blurry", "blurry", 2},
      {"anonymize " + in + " -o " + out + " --masks-csv /nonexistent/dir/masks.csv", "cannot write", 2},
      {"anonymize " + in + " -o " + out + " --set mosaic.pixel_size=1", "mosaic.pixel_size", 2},
      {"anonymize " + in + " -o " + out + " --min-cell eight", "mosaic.min_cell", 2},
      {"anonymize " + in + " -o " + out + " --unknown-flag", "unknown-flag", 109},
  };
  for (const auto& c : cases) {
    auto r = RunVeil(c.args);
    EXPECT_NE(r.rc, 0) << c.args;
    if (c.rc < 100) {
      EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.out;
    }
    EXPECT_LT(r.rc, 128) << "crashed: " << c.args;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
  }
}

TEST(Cli, ConfigFileEnvAndFlagsWithUnknownKeysRejected) {
  const std::string cfg = test::TempPath("veil.toml");
  std::ofstream(cfg) << "[privacy]\ndetect_every = 2\n[mosaic]\nmargin = 0.3\n";
  auto r = RunVeil("anonymize --config " + cfg + " --margin 0.25 --print-config");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("detect_every = \"2\"  # file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("margin = 0.25  # flag"), std::string::npos) << r.out;
  std::ofstream(cfg) << "[inference]\nbatch_wait_us = 500\n";
  r = RunVeil("anonymize " + Media("sample.y4m") + " -o /tmp/x.ivf --config " + cfg);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("inference.batch_wait_us"), std::string::npos) << r.out;
  r = RunVeil("anonymize --print-config 2>&1", "VEIL_PRIVACY__DETECT_EVERY=5 VEIL_ENCODE__WORKERS=4 ");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("VEIL_ENCODE__WORKERS"), std::string::npos) << r.out;
  r = RunVeil("anonymize --print-config", "VEIL_PRIVACY__DETECT_EVERY=5 ");
  EXPECT_NE(r.out.find("detect_every = \"5\"  # env"), std::string::npos) << r.out;
  std::filesystem::remove(cfg);
}

TEST(Cli, BenchReportsTheRatio) {
  auto r = RunVeil("bench " + Media("sample_720p30.ivf") + " --max-frames 60 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = JsonTail(r.out);
  ASSERT_TRUE(j.contains("ratio"));
  EXPECT_GT(j["cpu_ms_per_frame_bypass"].get<double>(), 0);
  EXPECT_GT(j["ratio"].get<double>(), 1.0);  // detection is not free
  EXPECT_EQ(j["runs"].size(), 2u);
}

// veil bench --paced: each frame's work starts at its instant at the clip's 30 fps, as a live
// session's does, so 45 frames take at least 44 frame intervals of wall time (back to back they
// take ~0.6 s here); the frames and the outputs are the same as unpaced.
TEST(Cli, BenchPacedRunsAtTheClipsFrameRate) {
  auto r = RunVeil("bench " + Media("sample_720p30.ivf") + " --max-frames 45 --paced --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = JsonTail(r.out);
  EXPECT_EQ(j["paced"], true);
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["frames"], 45);
    EXPECT_GE(run["wall_ms"].get<double>(), 44 * 1000.0 / 30) << run.dump();
  }
  auto flat = JsonTail(RunVeil("bench " + Media("sample_720p30.ivf") + " --max-frames 45 --json").out);
  EXPECT_EQ(flat["paced"], false);
  EXPECT_EQ(flat["runs"][0]["output"]["bytes"], j["runs"][0]["output"]["bytes"]);  // the same encode
  // The per-encoder measurements are not paced: asking for both is an error, not a silent no-op.
  EXPECT_EQ(RunVeil("bench " + Media("sample_720p30.ivf") + " --paced --speed-steps").rc, 2);
}

TEST(Cli, EvalJsonNamesItsFields) {
  auto r = RunVeil("eval --max-images 6 --frames-per-photo 6 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = JsonTail(r.out);
  for (const char* k : {"recall_ge20", "recall_ge40", "precision", "ms_per_image"})
    EXPECT_TRUE(j["photos"].contains(k)) << k;
  for (const char* k : {"leak_rate_all", "leak_rate_clear", "flicker_all"}) EXPECT_TRUE(j["motion"].contains(k)) << k;
  auto bad = RunVeil("eval --faces /nonexistent");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.out.find("ground_truth.csv"), std::string::npos);
}

TEST(Cli, EvalSkipsDegenerateBoxesWithAWarning) {
  // WIDER's official val annotations hold a few boxes of zero width or height.
  const std::string dir = test::TempPath("eval_degenerate");
  const std::string img = "images/0--Parade/0_Parade_Parade_0_376.jpg";
  std::filesystem::create_directories(dir + "/images/0--Parade");
  std::filesystem::copy_file(test::Assets() + "/faces/" + img, dir + "/" + img);
  std::ofstream(dir + "/ground_truth.csv") << "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose\n"
                                           << img << ",142,270,34,44,2,0,1,0,0,1\n"
                                           << img << ",300,200,0,30,0,0,0,0,0,0\n";
  auto r = RunVeil("eval --photos-only --json --faces " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("skipped 1 box"), std::string::npos) << r.out;
  EXPECT_EQ(JsonTail(r.out)["skipped_boxes"], 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace veil
