#include "cli/report.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "core/metrics.h"

namespace veil::cli {
namespace {
struct Row {
  const char* name;
  const StageStats* s;
};
std::vector<Row> Rows(const JobSummary& s) {
  return {{"decode", &s.decode}, {"preprocess", &s.preprocess}, {"detect", &s.detect},
          {"track", &s.track},   {"mosaic", &s.mosaic},         {"encode", &s.encode}};
}
}  // namespace

std::string StageTable(const JobSummary& s) {
  std::string o = fmt::format("{:<11} {:>10} {:>10} {:>10}\n", "stage", "mean ms", "p99 ms", "max ms");
  double sum = 0;
  for (const auto& r : Rows(s)) {
    o += fmt::format("{:<11} {:>10.3f} {:>10.3f} {:>10.3f}\n", r.name, r.s->mean(), r.s->percentile(99),
                     r.s->percentile(100));
    sum += r.s->mean();
  }
  o += fmt::format("{:<11} {:>10.3f}\n", "sum", sum);
  o += fmt::format("frames {}  wall {:.0f} ms ({:.1f} fps)  CPU {:.2f} ms/frame (all threads)\n", s.frames,
                   s.wall_ms, s.wall_ms > 0 ? s.frames * 1000.0 / s.wall_ms : 0.0, s.cpu_per_frame());
  o += fmt::format("detections {}  detect failures {}  fail-closed frames {}  scene cuts {}  cadence 1/{}\n",
                   s.privacy.detections_run, s.privacy.detect_failures, s.privacy.fail_closed,
                   s.privacy.scene_cuts, s.every_final);
  if (s.privacy.doubtful_detections > 0)
    o += fmt::format("second look: {} detections doubted\n", s.privacy.doubtful_detections);
  if (s.video.audio_streams > 0)
    o += fmt::format("audio: {} stream(s) copied, {} skipped (container cannot hold them), {} packets\n",
                     s.audio_copied, s.audio_skipped, s.audio_packets);
  return o;
}

nlohmann::json SummaryJson(const JobSummary& s) {
  nlohmann::json j;
  j["frames"] = s.frames;
  j["wall_ms"] = s.wall_ms;
  j["cpu_ms_per_frame"] = s.cpu_per_frame();
  j["fps"] = s.wall_ms > 0 ? s.frames * 1000.0 / s.wall_ms : 0.0;
  for (const auto& r : Rows(s))
    j["stages"][r.name] = {{"mean_ms", r.s->mean()}, {"p99_ms", r.s->percentile(99)}, {"max_ms", r.s->percentile(100)}};
  j["detections_run"] = s.privacy.detections_run;
  j["detect_failures"] = s.privacy.detect_failures;
  j["fail_closed_frames"] = s.privacy.fail_closed;
  j["scene_cuts"] = s.privacy.scene_cuts;
  j["doubtful_detections"] = s.privacy.doubtful_detections;
  j["detect_every_final"] = s.every_final;
  j["input"] = {{"width", s.video.width}, {"height", s.video.height}, {"fps", s.video.fps}, {"codec", s.video.codec}};
  j["output"] = {{"codec", s.codec_out}, {"bytes", s.bytes_out}};
  j["audio"] = {{"streams_in", s.video.audio_streams}, {"copied", s.audio_copied}, {"skipped", s.audio_skipped},
                {"packets", s.audio_packets}};
  j["input_error"] = s.input_status.ok() ? "" : s.input_status.message();
  return j;
}

std::string SummaryPrometheus(const JobSummary& s, const std::string& input) {
  MetricsRegistry r;
  const Labels job = {{"input", input}};
  for (const auto& row : Rows(s)) {
    Labels l = job;
    l.emplace_back("stage", row.name);
    Histogram& h = r.GetHistogram("veil_stage_latency_seconds", "Per-frame wall time of each pipeline stage, s",
                                  LatencyBucketsMs(), l, kMsToSeconds);
    for (double v : row.s->samples()) h.Observe(v);
  }
  r.GetCounter("veil_frames_total", "Frames processed", job).Inc(double(s.frames));
  r.GetCounter("veil_detections_total", "Detector runs", job).Inc(double(s.privacy.detections_run));
  r.GetCounter("veil_detect_failures_total", "Detector runs that failed", job).Inc(double(s.privacy.detect_failures));
  r.GetCounter("veil_fail_closed_frames_total", "Frames sent as a whole-frame mosaic for lack of a fresh result",
               job).Inc(double(s.privacy.fail_closed));
  r.GetGauge("veil_cpu_seconds_per_frame", "Process CPU per frame, all threads, s", job, kMsToSeconds).Set(s.cpu_per_frame());
  return r.ExportText();
}

ProgressFn TerminalProgress() {
  if (!isatty(STDERR_FILENO)) return {};
  auto finished = std::make_shared<bool>(false);
  return [finished](int64_t done, int64_t total, double ms) {
    if (*finished) return;
    const double fps = ms > 0 ? done * 1000.0 / ms : 0;
    if (total > 0) {
      const int width = 30;
      const double frac = std::min(1.0, double(done) / total);
      const int fill = int(frac * width);
      std::fprintf(stderr, "\r[%s%s] %3.0f%% %lld/%lld frames %.1f fps ", std::string(fill, '#').c_str(),
                   std::string(width - fill, '.').c_str(), frac * 100, (long long)done, (long long)total, fps);
    } else {
      std::fprintf(stderr, "\r%lld frames %.1f fps ", (long long)done, fps);
    }
    if (total > 0 && done >= total) {
      std::fprintf(stderr, "\n");
      *finished = true;
    }
    std::fflush(stderr);
  };
}

const char kMasksCsvHeader[] =
    "frame,x,y,w,h,kind,confirmed,core_x,core_y,core_w,core_h,grown_x,grown_y,grown_w,grown_h,"
    "round_cx,round_cy,round_ix,round_iy,round_rx,round_ry\n";

std::string MasksCsvRows(int64_t frame, const FrameReport& r) {
  std::string out;
  auto rect = [&](const Rect& b) { out.append(fmt::format("{},{},{},{}", b.x0, b.y0, b.width(), b.height())); };
  for (size_t i = 0; i < r.rects.size(); ++i) {
    out.append(fmt::format("{},", frame));
    rect(r.rects[i]);
    if (r.origins.empty()) {  // fail-closed or full_blur: the whole frame, no track behind it
      out.append(",whole_frame,,,,,,,,,,,,,,,\n");
      continue;
    }
    if (i >= r.origins.size()) break;
    const MaskOrigin& o = r.origins[i];
    out.append(o.matched ? ",matched," : ",coasting,");
    out.append(o.confirmed ? "1," : "0,");
    rect(o.core);
    out.push_back(',');
    rect(o.grown);
    const RoundRect& g = r.rects[i];
    if (g.round)
      out.append(fmt::format(",{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f}\n", g.cx, g.cy, g.ix, g.iy, g.rx, g.ry));
    else
      out.append(",,,,,,\n");
  }
  return out;
}

}  // namespace veil::cli
