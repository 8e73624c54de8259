// libFuzzer target: a small media file as `veil anonymize` and `veil publish` open one ->
// MediaReader (FFmpeg demux with the "file" protocol only, probing, size limits before
// allocation, decode to I420, audio pass-through) -> at most 64 items read.
// The input is handed over as /proc/self/fd/N of an in-memory file (memfd), so nothing is
// written to disk. Seeds: small VP8 IVF/WebM, H.264 MP4, Y4M and Opus files that
// scripts/fuzz.sh generates with ffmpeg.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "media/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz-media", 0);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < size) {
    const ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += size_t(n);
  }
  lseek(fd, 0, SEEK_SET);
  auto r = veil::MediaReader::Open("/proc/self/fd/" + std::to_string(fd));
  if (r.ok()) {
    for (int i = 0; i < 64; ++i)
      if (std::holds_alternative<veil::EndOfStream>((*r)->Next())) break;
  }
  close(fd);
  return 0;
}
