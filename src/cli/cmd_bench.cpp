// veil bench IN: the same input in bypass and anonymize, in one run.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "cli/report.h"
#include "media/speed_ladder.h"

namespace veil::cli {
namespace {

// The codec a live session would encode `enc` in (vp8 unless set), with its H.264 profile.
std::string AsLiveSessions(EncoderOptions& enc) {
  const std::string codec = enc.codec.empty() ? "vp8" : enc.codec;
  if (codec == "h264" && enc.x264_profile.empty()) enc.x264_profile = "baseline";  // as live sessions
  return codec;
}

// veil bench --speed-steps: what each step of the load-adaptive encoder speed costs.
void SpeedSteps(const std::string& in, EncoderOptions enc, int64_t max_frames, bool json, int* rc) {
  const std::string codec = AsLiveSessions(enc);
  auto steps = MeasureSpeedLadder(in, codec, enc, max_frames);
  if (!steps) return Fail(rc, 1, steps.error());
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const SpeedStepCost& c : *steps)
      j.push_back({{"step", c.step}, {"setting", c.setting}, {"frames", c.frames}, {"encode_cpu_ms", c.encode_cpu_ms},
                   {"encode_cpu_ms_p99", c.encode_cpu_ms_p99}, {"encode_cpu_ms_max", c.encode_cpu_ms_max},
                   {"fast_cut_frames", c.fast_cut_frames},
                   {"psnr_y", c.psnr_y}, {"psnr_yuv", c.psnr_yuv}, {"kbps", c.kbps}});
    fmt::print("{}\n", nlohmann::json{{"input", in}, {"codec", codec}, {"steps", j}}.dump(2));
    return;
  }
  fmt::print("{} encoder speed steps on {} (one thread, same target bitrate)\n", codec, in);
  fmt::print(
      "| step | setting | encode CPU ms/frame | x step 0 | p99 / max frame ms | fast cuts | PSNR Y | PSNR YUV | kbps |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  const double base = steps->front().encode_cpu_ms;
  for (const SpeedStepCost& c : *steps)
    fmt::print("| {} | {} | {:.2f} | {:.2f} | {:.1f} / {:.1f} | {} | {:.2f} dB | {:.2f} dB | {:.0f} |\n", c.step, c.setting,
               c.encode_cpu_ms, base > 0 ? c.encode_cpu_ms / base : 0, c.encode_cpu_ms_p99, c.encode_cpu_ms_max,
               c.fast_cut_frames, c.psnr_y, c.psnr_yuv, c.kbps);
}

// veil bench --compare-fast-cuts: encoder.fast_cuts off and on, the same frames to both in turn.
void FastCuts(const std::string& in, EncoderOptions enc, int64_t max_frames, bool json, int* rc) {
  const std::string codec = enc.codec.empty() ? "vp8" : enc.codec;
  if (codec != "vp8") return Fail(rc, 2, "--compare-fast-cuts: encoder.fast_cuts is a vp8 setting");
  auto rows = MeasureFastCuts(in, codec, enc, max_frames);
  if (!rows) return Fail(rc, 1, rows.error());
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const FastCutsCost& c : *rows)
      j.push_back({{"fast_cuts", c.fast_cuts}, {"frames", c.frames}, {"cut_frames", c.cut_frames},
                   {"cut_indices", c.cut_indices},
                   {"encode_cpu_ms", c.encode_cpu_ms}, {"cut_encode_cpu_ms", c.cut_encode_cpu_ms},
                   {"other_encode_cpu_ms", c.other_encode_cpu_ms}, {"psnr_y", c.psnr_y}, {"psnr_yuv", c.psnr_yuv},
                   {"kbps", c.kbps}});
    fmt::print("{}\n", nlohmann::json{{"input", in}, {"codec", codec}, {"rows", j}}.dump(2));
    return;
  }
  fmt::print("{} encoder.fast_cuts on {} (one thread, both encoders fed each frame in turn)\n", codec, in);
  fmt::print(
      "| fast_cuts | encode CPU ms/frame | on the {} cut frames | on the other frames | PSNR Y | PSNR YUV | kbps |\n"
      "|---|---|---|---|---|---|---|\n",
      rows->front().cut_frames);
  for (const FastCutsCost& c : *rows)
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} dB | {:.2f} dB | {:.0f} |\n", c.fast_cuts, c.encode_cpu_ms,
               c.cut_encode_cpu_ms, c.other_encode_cpu_ms, c.psnr_y, c.psnr_yuv, c.kbps);
}

// veil bench --compare-encoder-paths: the file writer's encoder against the live one.
void EncoderPaths(const std::string& in, EncoderOptions enc, int64_t max_frames, bool json, int* rc) {
  const std::string codec = AsLiveSessions(enc);
  auto rows = MeasureEncoderPaths(in, codec, enc, max_frames);
  if (!rows) return Fail(rc, 1, rows.error());
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const EncoderPathCost& c : *rows)
      j.push_back({{"path", c.path}, {"frames", c.frames}, {"encode_cpu_ms", c.encode_cpu_ms}, {"psnr_y", c.psnr_y},
                   {"kbps", c.kbps}});
    fmt::print("{}\n", nlohmann::json{{"input", in}, {"codec", codec}, {"rows", j}}.dump(2));
    return;
  }
  fmt::print("{} encoders on {} (one thread, each fed every frame in turn)\n", codec, in);
  fmt::print("| encoder | encode CPU ms/frame | x the file writer's | PSNR Y | kbps |\n|---|---|---|---|---|\n");
  const double base = rows->front().encode_cpu_ms;
  for (const EncoderPathCost& c : *rows)
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} dB | {:.0f} |\n", c.path, c.encode_cpu_ms,
               base > 0 ? c.encode_cpu_ms / base : 0, c.psnr_y, c.kbps);
}

}  // namespace

void RegisterBench(CLI::App& app, int* rc) {
  struct Opts {
    std::string in, out_dir;
    ConfigOptions config;
    int repeat = 1;
    int64_t max_frames = 0;
    bool json = false;
    bool speed_steps = false;
    bool fast_cuts = false;
    bool encoder_paths = false;
    bool paced = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("bench", "Cost of anonymize vs bypass on one input, in one run");
  sub->add_option("input", o->in, "Input video");
  AddConfigOptions(*sub, o->config);
  sub->add_option("--repeat", o->repeat, "Alternate bypass/anonymize this many times")->check(CLI::Range(1, 20));
  sub->add_option("--max-frames", o->max_frames, "Frames per run (0 = all)")->check(CLI::NonNegativeNumber);
  sub->add_option("--out-dir", o->out_dir, "Keep the encoded outputs here (default: temporary, deleted)");
  sub->add_flag("--json", o->json, "Print results as JSON on stdout");
  sub->add_flag("--paced", o->paced,
                "Start each frame at its instant on the input's frame rate, as a live session does, instead of "
                "back to back (the core idles between frames)");
  sub->add_flag("--speed-steps", o->speed_steps,
                "Instead: the live encoder's speed steps (cost, PSNR, bitrate at the same target bitrate)");
  sub->add_flag("--compare-fast-cuts", o->fast_cuts,
                "Instead: the live vp8 encoder with encoder.fast_cuts off and on, fed the same frames in turn "
                "(cost on the cut frames and the others, PSNR, bitrate)");
  sub->add_flag("--compare-encoder-paths", o->encoder_paths,
                "Instead: the file writer's encoder (FFmpeg's) against the live one as a session opens it (for "
                "vp8 libvpx's own), fed the same frames in turn (cost, PSNR, bitrate)");
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    if (o->in.empty()) return Fail(rc, 2, "an input file is required");
    if (o->paced && (o->fast_cuts || o->encoder_paths || o->speed_steps))
      return Fail(rc, 2, "--paced paces the bypass/anonymize runs; --speed-steps and the --compare-* runs are not paced");
    if (o->fast_cuts) return FastCuts(o->in, cfg->encoder, o->max_frames, o->json, rc);
    if (o->encoder_paths) return EncoderPaths(o->in, cfg->encoder, o->max_frames, o->json, rc);
    if (o->speed_steps) return SpeedSteps(o->in, cfg->encoder, o->max_frames, o->json, rc);
    const PrivacyConfig* pc = &cfg->privacy;
    std::string source;
    auto det = LoadDetector(cfg->detector, &source);
    if (!det) return Fail(rc, 2, det.error());
    namespace fs = std::filesystem;
    const bool keep = !o->out_dir.empty();
    const fs::path dir = keep ? fs::path(o->out_dir) : fs::temp_directory_path() / fmt::format("veil-bench-{}", getpid());
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Fail(rc, 2, "cannot create " + dir.string() + ": " + ec.message());
    // Same container/codec as the input's family: VP8 in IVF unless the input is H.264.
    std::string ext = cfg->encoder.codec == "h264" ? "mkv" : "ivf";
    nlohmann::json runs = nlohmann::json::array();
    double cpu[2] = {0, 0};
    int64_t frames[2] = {0, 0};
    JobSummary last[2];
    for (int rep = 0; rep < o->repeat; ++rep) {
      for (int k = 0; k < 2; ++k) {
        JobConfig jc;
        jc.input = o->in;
        jc.output = (dir / fmt::format("bench-{}.{}", k == 0 ? "bypass" : "anonymize", ext)).string();
        jc.privacy = *pc;
        jc.privacy.mode = k == 0 ? Mode::kBypass : Mode::kAnonymize;
        jc.encoder = cfg->encoder;
        jc.reader.decoder_threads = cfg->decode_threads;
        jc.max_frames = o->max_frames;
        jc.paced = o->paced;
        auto res = RunOfflineJob(jc, det->get());
        if (!res || !res->input_status.ok()) {
          fmt::print(stderr, "veil: {}\n", res ? res->input_status.message() : res.error());
          *rc = 1;
          if (!keep) fs::remove_all(dir, ec);
          return;
        }
        cpu[k] += res->cpu_ms;
        frames[k] += res->frames;
        auto j = SummaryJson(*res);
        j["mode"] = k == 0 ? "bypass" : "anonymize";
        j["repeat"] = rep;
        runs.push_back(j);
        last[k] = std::move(*res);
      }
    }
    if (!keep) fs::remove_all(dir, ec);
    const double b = frames[0] ? cpu[0] / frames[0] : 0, a = frames[1] ? cpu[1] / frames[1] : 0;
    const double ratio = b > 0 ? a / b : 0;
    if (o->json) {
      nlohmann::json j = {{"input", o->in},
                          {"detector", (*det)->name()},
                          {"cpu_ms_per_frame_bypass", b},
                          {"cpu_ms_per_frame_anonymize", a},
                          {"ratio", ratio},
                          {"paced", o->paced},
                          {"runs", runs}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("input {} ({}x{} {:.2f} fps {}), detector {} ({}), {} repeat(s){}\n", o->in, last[0].video.width,
               last[0].video.height, last[0].video.fps, last[0].video.codec, (*det)->name(), source, o->repeat,
               o->paced ? ", paced at the input's frame rate" : "");
    fmt::print("\n== bypass (last run)\n{}\n== anonymize (last run)\n{}\n", StageTable(last[0]), StageTable(last[1]));
    fmt::print("CPU per frame: bypass {:.2f} ms, anonymize {:.2f} ms, ratio anonymize/bypass {:.3f}\n", b, a, ratio);
  });
}

}  // namespace veil::cli
