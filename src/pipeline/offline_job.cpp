#include "pipeline/offline_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace veil {
namespace {

namespace fs = std::filesystem;

// The output is the input when both name one file (same device and inode: also
// through links, ./ prefixes or hard links), or the same path where neither exists yet.
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa{}, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code e1, e2;
  return fs::weakly_canonical(a, e1) == fs::weakly_canonical(b, e2) && !e1 && !e2;
}

}  // namespace

OutputTarget::OutputTarget(const std::string& output) : final_(output), write_(output) {
  struct stat st{};
  // A special file (/dev/null, a FIFO) is written as it is: it cannot be replaced by a rename.
  if (::stat(output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;
  const fs::path p(output);
  // Beside the output (same file system: the rename is atomic), hidden, keeping the
  // extension: the container and codec are chosen by it.
  // (Built with append: GCC 12 warns falsely, -Wrestrict, on "." + std::string&&.)
  std::string name = ".";
  name.append(p.stem().string()).append(".veil-").append(std::to_string(::getpid())).append(".partial");
  name.append(p.extension().string());
  write_ = (p.parent_path() / name).string();
}

OutputTarget::~OutputTarget() {
  if (!done_ && write_ != final_) std::remove(write_.c_str());
}

Status OutputTarget::Commit() {
  if (write_ != final_) {
    std::error_code ec;
    fs::rename(write_, final_, ec);
    if (ec) return Status::Error("cannot move the finished output into place at " + final_ + ": " + ec.message());
  }
  done_ = true;
  return Status::Ok();
}

Result<JobSummary> RunOfflineJob(const JobConfig& cfg, Detector* detector, const ProgressFn& progress) {
  PrivacyConfig pc = cfg.privacy;
  if (SameFile(cfg.input, cfg.output))
    return Status::Error("the output is the input (" + cfg.output + "): refusing to overwrite it; choose another output");
  auto reader = MediaReader::Open(cfg.input, cfg.reader);
  if (!reader) return reader.status();
  MediaReader& in = **reader;
  pc.fps = in.info().fps > 0 ? in.info().fps : 30.0;  // result ages are measured in the input's frame time
  if (Status s = Validate(pc); !s) return s;
  if (pc.mode == Mode::kAnonymize && !detector) return Status::Error("anonymize mode needs a detector");
  OutputTarget target(cfg.output);  // written aside, moved into place only when finished
  auto writer = MediaWriter::Open(target.write_path(), in.info(), cfg.encoder, &in);
  if (!writer) return writer.status();
  MediaWriter& out = **writer;

  JobSummary sum;
  sum.video = in.info();
  sum.codec_out = out.codec();
  sum.audio_copied = out.audio_streams_copied();
  sum.audio_skipped = out.audio_streams_skipped();
  PrivacyStage stage(pc, detector);
  const double cpu0 = ProcessCpuMs(), wall0 = NowMs();
  Status write_status;
  const double frame_ms = 1000.0 / pc.fps;
  for (;;) {
    if (cfg.max_frames > 0 && sum.frames >= cfg.max_frames) break;
    // Paced: frame n starts at wall0 + n frame intervals. One that is late starts at once, and so
    // do those after it until the schedule is met again, as a live session's queued frames would.
    if (cfg.paced)
      if (const double wait = wall0 + double(sum.frames) * frame_ms - NowMs(); wait > 0)
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait));
    double t0 = NowMs();
    ReadItem item = in.Next();
    if (std::holds_alternative<EndOfStream>(item)) break;
    if (auto* pkt = std::get_if<PassthroughPacket>(&item)) {
      ++sum.audio_packets;
      write_status = out.WritePassthrough(*pkt);
      if (!write_status) break;
      continue;
    }
    FramePtr& frame = std::get<FramePtr>(item);
    sum.decode.Add(NowMs() - t0);
    const FrameReport rep = stage.Process(*frame);
    if (cfg.on_frame) cfg.on_frame(sum.frames, rep);
    sum.preprocess.Add(rep.ms_preprocess);
    sum.detect.Add(rep.ms_detect);
    sum.track.Add(rep.ms_track);
    sum.mosaic.Add(rep.ms_mosaic);
    t0 = NowMs();
    write_status = out.WriteFrame(*frame);
    sum.encode.Add(NowMs() - t0);
    if (!write_status) break;
    ++sum.frames;
    if (progress && sum.frames % 5 == 0) progress(sum.frames, in.info().frames_estimate, NowMs() - wall0);
  }
  Status fin = out.Finish();  // flush time counts in cpu_ms, not in the per-frame encode stats
  sum.cpu_ms = ProcessCpuMs() - cpu0;
  sum.wall_ms = NowMs() - wall0;
  sum.privacy = stage.counters();
  sum.every_final = stage.current_every();
  sum.bytes_out = out.bytes_written();
  sum.input_status = in.end_status();
  if (!write_status) return Status::Error("writing " + cfg.output + " failed: " + write_status.message());
  if (!fin) return Status::Error("finishing " + cfg.output + " failed: " + fin.message());
  (*writer).reset();  // closed before it is moved into place
  if (Status s = target.Commit(); !s) return s;
  if (progress) progress(sum.frames, sum.frames, sum.wall_ms);  // completes the bar when the estimate was off
  return sum;
}

}  // namespace veil
