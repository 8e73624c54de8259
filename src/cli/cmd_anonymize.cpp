#include <cstdio>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "cli/report.h"

namespace veil::cli {

void RegisterAnonymize(CLI::App& app, int* rc) {
  struct Opts {
    std::string in, out;
    ConfigOptions config;
    int64_t max_frames = 0;
    bool json = false;
    std::string metrics_file;
    std::string masks_csv;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("anonymize", "Pixelate every face in a video file");
  sub->add_option("input", o->in, "Input video (IVF/WebM/MP4/MKV/Y4M)");
  sub->add_option("-o,--output", o->out, "Output (.ivf/.webm VP8, .mp4/.mkv H.264, .y4m raw)");
  AddConfigOptions(*sub, o->config);
  sub->add_option("--max-frames", o->max_frames, "Stop after N frames (0 = all)")->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", o->json, "Print the summary as JSON on stdout");
  sub->add_option("--metrics-file", o->metrics_file,
                  "Also write the figures in Prometheus text format to this file (textfile collector)");
  sub->add_option("--masks-csv", o->masks_csv,
                  "Also write every pixelated rectangle, per frame, with the track behind it, to this CSV");
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    if (o->in.empty() || o->out.empty()) return Fail(rc, 2, "usage: veil anonymize IN -o OUT [options]");
    const PrivacyConfig* pc = &cfg->privacy;
    std::unique_ptr<Detector> det;
    std::string source;
    if (pc->mode == Mode::kAnonymize) {
      auto d = LoadDetector(cfg->detector, &source);
      if (!d) return Fail(rc, 2, d.error());
      det = std::move(*d);
    }
    JobConfig jc;
    jc.input = o->in;
    jc.output = o->out;
    jc.privacy = *pc;
    jc.encoder = cfg->encoder;
    jc.reader.decoder_threads = cfg->decode_threads;
    jc.max_frames = o->max_frames;
    std::ofstream masks;
    if (!o->masks_csv.empty()) {
      masks.open(o->masks_csv);
      if (!masks) return Fail(rc, 2, "cannot write " + o->masks_csv);
      masks << kMasksCsvHeader;
      jc.on_frame = [&masks](int64_t frame, const FrameReport& r) { masks << MasksCsvRows(frame, r); };
    }
    if (!o->json && det) fmt::print(stderr, "veil: detector {} ({})\n", det->name(), source);
    auto res = RunOfflineJob(jc, det.get(), o->json ? ProgressFn{} : TerminalProgress());
    if (!res) {
      if (masks.is_open()) {
        masks.close();
        std::remove(o->masks_csv.c_str());  // no half a record of a job that wrote no output
      }
      return Fail(rc, 1, res.error());
    }
    if (masks.is_open()) {
      masks.close();
      if (!masks) return Fail(rc, 1, "writing " + o->masks_csv + " failed");
    }
    if (o->json) {
      fmt::print("{}\n", SummaryJson(*res).dump(2));
    } else {
      fmt::print("{} -> {} ({}, mode {})\n{}", o->in, o->out, res->codec_out, ModeName(pc->mode), StageTable(*res));
    }
    if (!o->metrics_file.empty()) {
      std::ofstream mf(o->metrics_file);
      mf << SummaryPrometheus(*res, o->in);
      if (!mf) return Fail(rc, 1, "cannot write " + o->metrics_file);
    }
    if (!res->input_status.ok()) {
      fmt::print(stderr, "veil: {}; the {} frames before it were written to {}\n", res->input_status.message(),
                 res->frames, o->out);
      *rc = 3;
    }
  });
}

}  // namespace veil::cli
