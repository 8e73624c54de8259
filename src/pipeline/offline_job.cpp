#include "pipeline/offline_job.h"


namespace veil {

Result<JobSummary> RunOfflineJob(const JobConfig& cfg, Detector* detector, const ProgressFn& progress) {
  PrivacyConfig pc = cfg.privacy;
  auto reader = MediaReader::Open(cfg.input, cfg.reader);
  if (!reader) return reader.status();
  MediaReader& in = **reader;
  pc.fps = in.info().fps > 0 ? in.info().fps : 30.0;  // result ages are measured in the input's frame time
  if (Status s = Validate(pc); !s) return s;
  if (pc.mode == Mode::kAnonymize && !detector) return Status::Error("anonymize mode needs a detector");
  auto writer = MediaWriter::Open(cfg.output, in.info(), cfg.encoder, &in);
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
  for (;;) {
    if (cfg.max_frames > 0 && sum.frames >= cfg.max_frames) break;
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
  if (progress) progress(sum.frames, sum.frames, sum.wall_ms);  // completes the bar when the estimate was off
  return sum;
}

}  // namespace veil
