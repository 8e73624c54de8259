// veil load: the field report's method as one command (docs/load.md).
//   veil load --server URL --input FILE [--stages 2,4,8,12] [--stage-seconds 40] [--mode M] [--out DIR]
//   veil load --compare A.toml B.toml [--repeat 3] --input FILE ...   (starts a server per configuration)
//   veil load --compare A.toml A.toml --page-poll-b 1000 ...          (B: an operator page open and polling)
//   veil load --compare A.toml A.toml --frame-phase aligned --frame-phase-b spread ...
//   veil load --explain [--out DIR]                                   (reads DIR/load.json and load.prev.json)
// Exit codes: 0 every stage passed; 1 a stage failed the pass mark; 2 bad
// options or input; 3 the server could not be used or the run was stopped (with --run-admitted,
// a stage refused in part and measured with its admitted sessions ends the run without a 3).
#include <filesystem>

#include <cstdio>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "client/api_client.h"
#include "load/child_server.h"
#include "media/demuxer.h"
#include "load/load_runner.h"
#include "load/report.h"

namespace veil::cli {
namespace {
using json = nlohmann::json;

Result<json> ReadJson(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::Error("cannot read " + path);
  json j = json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error(path + " is not a veil load JSON file");
  return j;
}

void Progress(const std::string& line) { std::fprintf(stderr, "veil load: %s\n", line.c_str()); }

bool AllPassed(const std::vector<LoadRun>& runs) {
  for (const auto& r : runs)
    for (const auto& s : r.stages)
      if (!s.passed) return false;
  return true;
}

}  // namespace

void RegisterLoad(CLI::App& app, int* rc) {
  struct Opts {
    LoadOptions load;
    std::string stages = "2,4,8,12", out = "out/load";
    std::vector<std::string> compare;
    int repeat = 3;
    double page_poll_b = 0;
    std::string frame_phase_b;
    bool explain = false;
    std::vector<std::string> explain_files;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("load", "Drive a veil server with live sessions in stages and report where the time goes");
  sub->add_option("--server", o->load.server, "veil serve URL (only this address is contacted)")->capture_default_str();
  sub->add_option("-i,--input", o->load.input, "VP8 or H.264 file sent as live RTP by every session (looping)");
  sub->add_option("--stages", o->stages, "Sessions per stage, e.g. 2,4,8,12")->capture_default_str();
  sub->add_option("--stage-seconds", o->load.stage_seconds, "Length of each stage, s")->capture_default_str();
  sub->add_option("--warmup", o->load.warmup_seconds, "Seconds at the start of each stage left out of the figures")
      ->capture_default_str();
  sub->add_option("--mode", o->load.mode, "Privacy mode of the sessions (default: the server's)");
  sub->add_option("--out", o->out, "Folder for load.md, load.json, load.csv, load.svg")->capture_default_str();
  sub->add_flag("--all-stages", o->load.all_stages, "Run every stage even after one fails the pass mark");
  sub->add_flag("--run-admitted", o->load.run_admitted,
                "A stage the server refuses in part (503) runs with the admitted sessions; the rest must all get 503; the run ends there");
  sub->add_flag("--force", o->load.force, "Run against a server that has sessions this tool did not create");
  sub->add_option("--label", o->load.label, "Name of this configuration in the tables");
  sub->add_option("--pass-fps", o->load.pass_fps, "Pass mark: every session receives more than this")->capture_default_str();
  sub->add_option("--pass-p99-ms", o->load.pass_p99_ms, "Pass mark: p99 server processing latency below this")
      ->capture_default_str();
  sub->add_option("--token", o->load.token, "Bearer token (or $VEIL_TOKEN)")->envname("VEIL_TOKEN");
  sub->add_option("--compare", o->compare, "Two server config files: start a server with each in turn, A B A B ...")
      ->expected(2);
  sub->add_option("--page-poll", o->load.page_poll_ms,
                  "Also poll like an open operator page every MS ms (per session: stats, history, snapshot.jpg)")
      ->check(CLI::Range(10.0, 60000.0));
  sub->add_option("--page-poll-b", o->page_poll_b,
                  "Compare mode: configuration B's runs poll like an open operator page every MS ms (A's do not)")
      ->check(CLI::Range(10.0, 60000.0));
  sub->add_option("--frame-phase", o->load.frame_phase,
                  "The sessions' frame phases to one another: created (where the creation calls put them), aligned "
                  "(every session's frames at the same instants: the worst case), spread (evenly over a frame), "
                  "drift (spread, and neighbours' clocks apart by a frame over the measured window: every phase)")
      ->check(CLI::IsMember({"created", "aligned", "spread", "drift"}))
      ->capture_default_str();
  sub->add_option("--frame-phase-b", o->frame_phase_b, "Compare mode: configuration B's runs use this frame phase")
      ->check(CLI::IsMember({"created", "aligned", "spread", "drift"}));
  sub->add_option("--repeat", o->repeat, "Compare mode: runs per configuration")->check(CLI::Range(1, 20))->capture_default_str();
  sub->add_flag("--explain", o->explain, "Explain the last run in --out (and what changed since the one before)");
  sub->add_option("--explain-files", o->explain_files, "Explain LAST.json [PREVIOUS.json] instead")->expected(1, 2);
  sub->callback([o, rc] {
    if (o->explain || !o->explain_files.empty()) {
      const std::string last = o->explain_files.empty() ? o->out + "/load.json" : o->explain_files[0];
      const std::string prev = o->explain_files.size() > 1 ? o->explain_files[1]
                               : o->explain_files.empty() ? o->out + "/load.prev.json" : "";
      auto a = ReadJson(last);
      if (!a) return Fail(rc, 2, a.error());
      Result<json> b = prev.empty() ? Result<json>(Status::Error("none")) : ReadJson(prev);
      std::fputs(Explain(*a, b ? &*b : nullptr).c_str(), stdout);
      return;
    }
    auto stages = ParseStages(o->stages);
    if (!stages) return Fail(rc, 2, stages.error());
    o->load.stages = *stages;
    if (o->load.input.empty()) return Fail(rc, 2, "--input FILE is required");
    if (auto probe = Demuxer::Open(o->load.input); !probe) return Fail(rc, 2, probe.error());
    if (Status s = Validate(o->load); !s) return Fail(rc, 2, s.message());
    InstallStopHandlers();
    std::error_code ec;
    std::filesystem::create_directories(o->out, ec);
    if (ec) return Fail(rc, 2, "cannot create " + o->out + ": " + ec.message());

    if (!o->compare.empty()) {
      for (const auto& f : o->compare)
        if (std::ifstream probe(f); !probe) return Fail(rc, 2, "cannot read config " + f);
      std::vector<LoadRun> runs[2];
      auto base = [](const std::string& p) { return p.substr(p.find_last_of('/') + 1); };
      const std::string files[2] = {o->compare[0], o->compare[1]};
      std::string labels[2] = {base(files[0]), base(files[1]) == base(files[0]) ? files[1] : base(files[1])};
      if (o->page_poll_b > 0) {
        if (o->load.page_poll_ms > 0) return Fail(rc, 2, "--page-poll and --page-poll-b exclude each other");
        if (files[1] == files[0]) labels[1] = base(files[1]);
        labels[0] += " (page closed)";
        labels[1] += fmt::format(" (page open, {:g} ms)", o->page_poll_b);
      }
      if (!o->frame_phase_b.empty()) {
        if (files[1] == files[0]) labels[1] = base(files[1]);
        labels[0] += " (phase " + o->load.frame_phase + ")";
        labels[1] += " (phase " + o->frame_phase_b + ")";
      }
      std::vector<std::string> stopped;  // runs the server stopped (a refusal): kept, with what they measured
      for (int k = 0; k < o->repeat; ++k)
        for (int c = 0; c < 2; ++c) {
          if (StopRequested()) return Fail(rc, 3, "interrupted");
          const std::string log = fmt::format("{}/server-{}-{}.log", o->out, c == 0 ? "a" : "b", k + 1);
          auto server = ChildServer::Start({"--config", files[c]}, log);
          if (!server) return Fail(rc, 3, labels[c] + ": " + server.error());
          Progress(fmt::format("run {}/{} of {} on {}", k + 1, o->repeat, labels[c], (*server)->url()));
          LoadOptions lo = o->load;
          lo.server = (*server)->url();
          lo.label = labels[c];
          lo.all_stages = true;  // the same stages in every run, for comparable figures
          if (c == 1 && o->page_poll_b > 0) lo.page_poll_ms = o->page_poll_b;
          if (c == 1 && !o->frame_phase_b.empty()) lo.frame_phase = o->frame_phase_b;
          auto r = RunLoad(lo, Progress);
          (*server)->Stop();
          if (!r) return Fail(rc, 3, r.error());
          if (StopRequested()) return Fail(rc, 3, "interrupted");
          // A configuration that collapses (the node refuses sessions as overloaded) is a result,
          // not a reason to lose the other runs: its measured stages count, the rest are missing.
          if (!r->stopped.empty())
            stopped.push_back(fmt::format("run {} of {} stopped: {}", k + 1, labels[c], r->stopped));
          runs[c].push_back(*r);
        }
      const auto figs = CompareFigures(runs[0], runs[1]);
      std::vector<LoadRun> all = runs[0];
      all.insert(all.end(), runs[1].begin(), runs[1].end());
      std::string table = CompareTable(labels[0], labels[1], figs);
      for (const std::string& s : stopped) table.append("\n").append(s).append(" (its later stages are not in the figures)\n");
      if (Status s = WriteOutputs(o->out, all, {{"compare", CompareJson(labels[0], labels[1], figs)}}); !s)
        return Fail(rc, 3, s.message());
      std::ofstream(o->out + "/compare.md") << table;
      std::printf("%s\n%s", MarkdownTable(all).c_str(), table.c_str());
      std::fprintf(stderr, "veil load: wrote %s/compare.md, load.json, load.csv, load.md, load.svg\n", o->out.c_str());
      if (!stopped.empty()) return Fail(rc, 3, fmt::format("{} run(s) stopped early: {}", stopped.size(), stopped.front()));
      return;
    }

    auto run = RunLoad(o->load, Progress);
    if (!run) return Fail(rc, 3, run.error());
    if (Status s = WriteOutputs(o->out, {*run}); !s) return Fail(rc, 3, s.message());
    std::printf("%s", MarkdownTable({*run}).c_str());
    std::fprintf(stderr, "veil load: wrote %s/load.md, load.json, load.csv, load.svg\n", o->out.c_str());
    // --run-admitted: a stage the server refused in part and that was measured ends the run as
    // asked; its figures decide the exit code like any stage's.
    const bool full = !run->stages.empty() && run->stages.back().refused > 0 && run->stages.back().window_s > 0;
    if (full) std::fprintf(stderr, "veil load: %s\n", run->stopped.c_str());
    else if (!run->stopped.empty()) return Fail(rc, 3, "stopped: " + run->stopped);
    if (!AllPassed({*run})) *rc = 1;
  });
}

}  // namespace veil::cli
