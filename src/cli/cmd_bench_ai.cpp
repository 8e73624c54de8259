// veil bench-ai: detection throughput and latency of the AI targets, in one
// run: S concurrent sessions (closed loop: each submits its next detection
// copy as soon as the previous one is answered) through an InferenceScheduler
// at each max batch size, against the in-process detector and against a
// `veil worker` on loopback (started here, one per batch size, so its own
// scheduler batches the same way), in the UINT8 and/or FP32 wire forms.
// Reports frames/s, submit->result latency, the batch sizes that formed,
// wire bytes per frame and CPU per frame (this process + the worker).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <thread>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "core/clock.h"
#include "inference/remote_target.h"
#include "inference/scheduler.h"
#include "load/child_server.h"
#include "media/reader.h"
#include "vision/preprocess.h"

namespace veil::cli {
namespace {

double ChildCpuMs(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string tok;
  double ut = 0, st = 0;
  for (int field = 3; in >> tok; ++field) {
    if (field == 14) ut = std::stod(tok);
    if (field == 15) {
      st = std::stod(tok);
      break;
    }
  }
  return (ut + st) * 1000.0 / double(sysconf(_SC_CLK_TCK));
}

struct RunResult {
  std::string target, form;
  int batch = 0;
  double fps = 0, p50 = 0, p99 = 0, mean_batch = 0, cpu_ms_per_frame = 0;
  double sent_per_frame = 0, received_per_frame = 0;
  int64_t frames = 0, failed = 0;
};

// S closed-loop submitters for `seconds` after a 1 s warm-up.
RunResult Drive(InferenceScheduler& sched, const std::vector<cv::Mat>& images, int sessions, double seconds,
                pid_t worker) {
  std::atomic<bool> stop{false}, measuring{false};
  std::mutex mu;
  StageStats lat;
  std::vector<int> batch_sizes;
  int64_t ok = 0, failed = 0;
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s) {
    threads.emplace_back([&, s] {
      for (size_t i = size_t(s) * 7; !stop; ++i) {
        std::promise<DetectResult> p;
        auto fut = p.get_future();
        DetectRequest q;
        q.session = uint64_t(s + 1);
        q.frame_index = int64_t(i);
        q.image = images[i % images.size()];
        q.done = [&p](DetectResult&& r) { p.set_value(std::move(r)); };
        const double t0 = NowMs();
        sched.Submit(std::move(q));
        DetectResult r = fut.get();
        if (!measuring) continue;
        std::lock_guard lk(mu);
        if (r.outcome == DetectOutcome::kOk) {
          ++ok;
          lat.Add(NowMs() - t0);
          batch_sizes.push_back(r.batch_size);
        } else {
          ++failed;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu0 = ProcessCpuMs(), wcpu0 = worker > 0 ? ChildCpuMs(worker) : 0, t0 = NowMs();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::microseconds(int64_t(seconds * 1e6)));
  measuring = false;
  const double t1 = NowMs(), cpu1 = ProcessCpuMs(), wcpu1 = worker > 0 ? ChildCpuMs(worker) : 0;
  stop = true;
  for (auto& t : threads) t.join();
  RunResult r;
  r.frames = ok;
  r.failed = failed;
  r.fps = ok * 1000.0 / (t1 - t0);
  r.p50 = lat.percentile(50);
  r.p99 = lat.percentile(99);
  double sum = 0;
  for (int b : batch_sizes) sum += b;
  r.mean_batch = batch_sizes.empty() ? 0 : sum / batch_sizes.size();
  r.cpu_ms_per_frame = ok ? ((cpu1 - cpu0) + (wcpu1 - wcpu0)) / ok : 0;
  return r;
}

}  // namespace

void RegisterBenchAi(CLI::App& app, int* rc) {
  struct Opts {
    std::string input, out;
    ConfigOptions config;
    int sessions = 4, frames = 60;
    double seconds = 8;
    std::vector<int> batches = {1, 2, 4, 8};
    std::vector<std::string> targets = {"local", "worker"}, forms = {"u8", "fp32"};
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("bench-ai", "Detection throughput and latency: in-process vs a remote worker, by batch size");
  sub->add_option("--input", o->input, "Video whose frames are the detection inputs")->required();
  AddConfigOptions(*sub, o->config);
  sub->add_option("--sessions", o->sessions, "Concurrent submitting sessions")->check(CLI::Range(1, 64));
  sub->add_option("--batches", o->batches, "Max batch sizes to run")->delimiter(',')->check(CLI::Range(1, 64));
  sub->add_option("--seconds", o->seconds, "Measured seconds per run (after 1 s warm-up)")->check(CLI::Range(1.0, 600.0));
  sub->add_option("--frames", o->frames, "Distinct frames taken from the input")->check(CLI::Range(1, 1000));
  sub->add_option("--targets", o->targets, "local and/or worker (a veil worker started on loopback)")->delimiter(',');
  sub->add_option("--forms", o->forms, "Wire forms for the worker: u8 (UINT8 NHWC) and/or fp32 (FP32 NCHW)")->delimiter(',');
  sub->add_option("--json", o->out, "Also write the results as JSON here");
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    for (const auto& t : o->targets)
      if (t != "local" && t != "worker") return Fail(rc, 2, "--targets takes local and/or worker, got '" + t + "'");
    for (const auto& f : o->forms)
      if (f != "u8" && f != "fp32") return Fail(rc, 2, "--forms takes u8 and/or fp32, got '" + f + "'");
    // The detection copies of the first frames, as a live session makes them.
    auto reader = MediaReader::Open(o->input);
    if (!reader) return Fail(rc, 2, reader.error());
    std::vector<cv::Mat> images;
    while (int(images.size()) < o->frames) {
      ReadItem it = (*reader)->Next();
      if (std::holds_alternative<EndOfStream>(it)) break;
      auto* f = std::get_if<FramePtr>(&it);
      if (!f) continue;
      cv::Mat bgr;
      DownscaleToBgr(**f, FitSize((*f)->width, (*f)->height, cfg->privacy.detect_box), bgr);
      images.push_back(bgr);
    }
    if (images.empty()) return Fail(rc, 2, o->input + ": no video frames");
    std::printf("bench-ai: %zu frames of %s as %dx%d detection copies, %d sessions, %.0f s per run\n", images.size(),
                o->input.c_str(), images[0].cols, images[0].rows, o->sessions, o->seconds);
    const DetectorConfig dc = cfg->detector;
    std::vector<RunResult> results;
    for (const std::string& target : o->targets) {
      const std::vector<std::string> forms = target == "local" ? std::vector<std::string>{"-"} : o->forms;
      for (const std::string& form : forms) {
        for (int b : o->batches) {
          SchedulerConfig sc;
          sc.max_batch = b;
          sc.max_wait_us = b > 1 ? 5000 : 0;
          sc.threads = 1;
          std::unique_ptr<ChildServer> worker;
          std::shared_ptr<RemoteTarget> remote;
          DetectorFactory factory;
          if (target == "local") {
            factory = [dc] { return LoadDetector(dc); };
          } else {
            // The worker batches the same way; two calls in flight keep it busy while one travels.
            const std::string log = fmt::format("/tmp/veil-bench-ai-worker-{}.log", getpid());
            auto w = ChildServer::Start({"--max-batch", std::to_string(b), "--infer-threads", "1"}, log, "", "worker");
            if (!w) return Fail(rc, 3, "cannot start veil worker: " + w.error());
            worker = std::move(*w);
            RemoteOptions ro;
            ro.endpoint = "127.0.0.1:" + std::to_string(worker->port());
            ro.model = form == "u8" ? "yunet_u8" : "yunet";
            ro.deadline_ms = 10000;
            ro.nms_iou = dc.nms_iou;
            remote = std::make_shared<RemoteTarget>(ro, nullptr, "bench");
            if (Status s = remote->Probe(); !s) return Fail(rc, 3, "worker not ready: " + s.message());
            sc.threads = 2;
            factory = [remote]() -> Result<std::unique_ptr<Detector>> {
              return std::unique_ptr<Detector>(new RemoteDetector(remote));
            };
          }
          auto sched = InferenceScheduler::Create(sc, factory, nullptr, target);
          if (!sched) return Fail(rc, 2, sched.error());
          const WireTotals w0 = remote ? remote->wire() : WireTotals{};
          RunResult r = Drive(**sched, images, o->sessions, o->seconds, worker ? worker->pid() : 0);
          (*sched)->Shutdown();
          if (remote) {
            const WireTotals w1 = remote->wire();
            const double n = double(w1.frames - w0.frames);
            r.sent_per_frame = n > 0 ? (w1.bytes_sent - w0.bytes_sent) / n : 0;
            r.received_per_frame = n > 0 ? (w1.bytes_received - w0.bytes_received) / n : 0;
          }
          if (worker) worker->Stop();
          r.target = target == "local" ? "in-process" : "worker (loopback)";
          r.form = target == "local" ? "-" : (form == "u8" ? "UINT8 NHWC" : "FP32 NCHW");
          r.batch = b;
          std::printf("  %-18s %-10s max batch %2d: %6.1f frames/s, latency p50 %6.1f p99 %6.1f ms, mean batch %.2f, "
                      "CPU %.1f ms/frame, wire %.0f / %.0f bytes/frame%s\n",
                      r.target.c_str(), r.form.c_str(), b, r.fps, r.p50, r.p99, r.mean_batch, r.cpu_ms_per_frame,
                      r.sent_per_frame, r.received_per_frame, r.failed ? fmt::format(" ({} failed)", r.failed).c_str() : "");
          std::fflush(stdout);
          results.push_back(r);
        }
      }
    }
    std::printf("\n| target | wire form | max batch | frames/s | latency p50 / p99 ms | mean batch | CPU ms/frame | wire bytes/frame (sent / received) |\n"
                "|---|---|---|---|---|---|---|---|\n");
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : results) {
      std::printf("| %s | %s | %d | %.1f | %.1f / %.1f | %.2f | %.1f | %s |\n", r.target.c_str(), r.form.c_str(),
                  r.batch, r.fps, r.p50, r.p99, r.mean_batch, r.cpu_ms_per_frame,
                  r.sent_per_frame > 0 ? fmt::format("{:.0f} / {:.0f}", r.sent_per_frame, r.received_per_frame).c_str()
                                       : "-");
      j.push_back({{"target", r.target}, {"form", r.form}, {"max_batch", r.batch}, {"fps", r.fps}, {"p50_ms", r.p50},
                   {"p99_ms", r.p99}, {"mean_batch", r.mean_batch}, {"cpu_ms_per_frame", r.cpu_ms_per_frame},
                   {"wire_sent_bytes_per_frame", r.sent_per_frame},
                   {"wire_received_bytes_per_frame", r.received_per_frame}, {"failed", r.failed}});
    }
    // Batch 1 against the best batch, per target and form.
    std::printf("\n");
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].batch != o->batches.front()) continue;
      const RunResult* best = &results[i];
      for (size_t k = i; k < results.size() && results[k].target == results[i].target && results[k].form == results[i].form; ++k)
        if (results[k].fps > best->fps) best = &results[k];
      std::printf("%s %s: best max batch %d gives %.2fx the frames/s of max batch %d (%.1f vs %.1f)\n",
                  results[i].target.c_str(), results[i].form.c_str(), best->batch, best->fps / results[i].fps,
                  results[i].batch, best->fps, results[i].fps);
    }
    if (!o->out.empty()) {
      std::ofstream f(o->out);
      f << j.dump(2) << "\n";
      if (!f) return Fail(rc, 2, "cannot write " + o->out);
    }
  });
}

}  // namespace veil::cli
