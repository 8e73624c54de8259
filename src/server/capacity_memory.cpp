#include "server/capacity_memory.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/sha256.h"

namespace veil {
namespace {
using json = nlohmann::json;
constexpr int kVersion = 1;
constexpr size_t kMaxBytes = 1 << 20;  // a few hundred bytes in use; anything this big is not ours

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0)
      if (size_t c = line.find(':'); c != std::string::npos) {
        size_t b = line.find_first_not_of(" \t", c + 1);
        return b == std::string::npos ? "" : line.substr(b);
      }
  return "unknown";
}

const char* PictureName(EncodePicture p) { return p == EncodePicture::kMosaic ? "mosaic" : "camera"; }
std::optional<EncodePicture> ParsePicture(const std::string& s) {
  if (s == "camera") return EncodePicture::kCamera;
  if (s == "mosaic") return EncodePicture::kMosaic;
  return std::nullopt;
}

std::string Dir(const std::string& path) {
  const size_t s = path.rfind('/');
  return s == std::string::npos ? "." : s == 0 ? "/" : path.substr(0, s);
}
}  // namespace

CapacityKey ThisNodeKey(double cores, const std::string& cost_settings) {
  CapacityKey k;
  k.cpu = CpuModel();
  k.cores = cores;
  auto exe = Sha256File("/proc/self/exe");
  k.build = exe ? *exe : "unknown";
  k.settings = Sha256Hex(cost_settings.data(), cost_settings.size());
  return k;
}

std::string CapacityStateJson(const CapacityMemory& m, const CapacityKey& key, const std::string& saved_utc) {
  json j = {{"version", kVersion},
            {"saved", saved_utc},
            {"node", {{"cpu", key.cpu}, {"cores", key.cores}, {"build", key.build}, {"settings", key.settings}}},
            {"costs", json::array()},
            {"encodes", json::array()},
            {"paired_shares", json::array()}};
  for (const auto& c : m.costs)
    j["costs"].push_back({{"codec", Name(c.codec)}, {"mode", ModeName(c.mode)}, {"ratio", c.ratio}, {"samples", c.samples},
                          {"transcode_ms", c.transcode_ms}});
  for (const auto& e : m.encodes)
    j["encodes"].push_back({{"codec", Name(e.codec)},
                            {"picture", PictureName(e.picture)},
                            {"step", e.step},
                            {"ms", e.ms},
                            {"samples", e.samples}});
  for (const auto& p : m.paired)
    j["paired_shares"].push_back({{"codec", Name(p.codec)},
                                  {"picture", PictureName(p.picture)},
                                  {"step", p.step},
                                  {"ratio", p.ratio},
                                  {"samples", p.samples}});
  return j.dump(1) + "\n";
}

Result<CapacityMemory> ParseCapacityState(const std::string& text, const CapacityKey& expect) {
  const auto bad = [](const std::string& why) { return Status::Error(StatusCode::kInvalidArgument, why); };
  if (text.size() > kMaxBytes) return bad(fmt::format("{} bytes, more than a capacity state ever holds", text.size()));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object (truncated or not veil's)");
  const auto num = [](const json& o, const char* k, double lo, double hi, double* out) {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number()) return false;
    *out = it->get<double>();
    return *out >= lo && *out <= hi;
  };
  const auto str = [](const json& o, const char* k, std::string* out) {
    auto it = o.find(k);
    if (it == o.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  double version = 0;
  if (!num(j, "version", 0, 1e9, &version) || version != kVersion)
    return bad(fmt::format("format version {} where {} is read", j.value("version", json()).dump(), kVersion));
  auto node = j.find("node");
  CapacityKey k;
  if (node == j.end() || !node->is_object() || !str(*node, "cpu", &k.cpu) || !num(*node, "cores", 0, 1e6, &k.cores) ||
      !str(*node, "build", &k.build) || !str(*node, "settings", &k.settings))
    return bad("no node key (cpu, cores, build, settings)");
  if (k.cpu != expect.cpu)
    return Status::Error(StatusCode::kConflict, "learned on another CPU (" + k.cpu + ", this is " + expect.cpu + ")");
  if (k.cores != expect.cores)
    return Status::Error(StatusCode::kConflict, fmt::format("learned on {:g} cores, this node counts {:g}", k.cores, expect.cores));
  if (k.build != expect.build) return Status::Error(StatusCode::kConflict, "learned by another build of veil");
  if (k.settings != expect.settings)
    return Status::Error(StatusCode::kConflict,
                         "learned with other encoder, decoder, privacy, detector, inference or executor settings");
  CapacityMemory m;
  auto costs = j.find("costs"), encodes = j.find("encodes");
  if (costs == j.end() || !costs->is_array() || encodes == j.end() || !encodes->is_array())
    return bad("no costs and encodes arrays");
  if (costs->size() > 64 || encodes->size() > 256) return bad("more figures than codecs, modes and steps allow");
  for (const json& c : *costs) {
    std::string codec, mode;
    double ratio = 0, samples = 0, transcode_ms = 0;
    if (!c.is_object() || !str(c, "codec", &codec) || !str(c, "mode", &mode) || !num(c, "ratio", 1e-3, 100, &ratio) ||
        !num(c, "samples", 1, 1e9, &samples))
      return bad("a cost entry out of range or incomplete: " + c.dump());
    // The transcode it is a multiple of: optional (0 or absent: not known), else a real timing.
    if (c.contains("transcode_ms") &&
        (!num(c, "transcode_ms", 0, 10000, &transcode_ms) || (transcode_ms > 0 && transcode_ms < 1e-2)))
      return bad("a cost entry's transcode_ms out of range: " + c.dump());
    auto vc = ParseVideoCodec(codec);
    auto md = ParseMode(mode);
    if (!vc || !md) return bad("a cost entry of an unknown codec or mode: " + c.dump());
    m.costs.push_back({*vc, *md, ratio, int(samples), transcode_ms});
  }
  for (const json& e : *encodes) {
    std::string codec;
    double step = 0, ms = 0, samples = 0;
    if (!e.is_object() || !str(e, "codec", &codec) || !num(e, "step", 0, VideoEncoder::kMaxSpeedSteps - 1, &step) ||
        step != double(int(step)) || !num(e, "ms", 1e-3, 10000, &ms) || !num(e, "samples", 1, 1e9, &samples))
      return bad("an encode entry out of range or incomplete: " + e.dump());
    auto vc = ParseVideoCodec(codec);
    if (!vc) return bad("an encode entry of an unknown codec: " + e.dump());
    // The picture it encoded (a file before it was kept: camera, the only one learned then).
    std::string picture = "camera";
    auto pic = e.contains("picture") && !str(e, "picture", &picture) ? std::nullopt : ParsePicture(picture);
    if (!pic) return bad("an encode entry of an unknown picture: " + e.dump());
    m.encodes.push_back({*vc, *pic, int(step), ms, int(samples)});
  }
  // The plan step's share taken within the same seconds (absent in a file from before it was
  // kept: learned again).
  if (auto paired = j.find("paired_shares"); paired != j.end()) {
    if (!paired->is_array() || paired->size() > 256) return bad("paired_shares is not an array of at most 256");
    for (const json& p : *paired) {
      std::string codec, picture;
      double step = 0, ratio = 0, samples = 0;
      if (!p.is_object() || !str(p, "codec", &codec) || !str(p, "picture", &picture) ||
          !num(p, "step", 1, VideoEncoder::kMaxSpeedSteps - 1, &step) || step != double(int(step)) ||
          !num(p, "ratio", 1e-3, 4, &ratio) || !num(p, "samples", 1, 1e9, &samples))
        return bad("a paired share out of range or incomplete: " + p.dump());
      auto vc = ParseVideoCodec(codec);
      auto pic = ParsePicture(picture);
      if (!vc || !pic) return bad("a paired share of an unknown codec or picture: " + p.dump());
      m.paired.push_back({*vc, *pic, int(step), ratio, int(samples)});
    }
  }
  return m;
}

Result<CapacityMemory> LoadCapacityState(const std::string& path, const CapacityKey& expect) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status::Error(StatusCode::kNotFound, "no file yet");
    return Status::Error(std::string("cannot read it: ") + std::strerror(errno));
  }
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, size_t(in.gcount()));
    if (text.size() > kMaxBytes) break;
  }
  return ParseCapacityState(text, expect);
}

Status SaveCapacityState(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Error("cannot write " + tmp + ": " + std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool synced = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !synced || !closed) {
    std::remove(tmp.c_str());
    return Status::Error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Error("cannot rename " + tmp + " over " + path + ": " + why);
  }
  return Status::Ok();
}

Status CheckCapacityStatePath(const std::string& path) {
  if (path.empty() || path.back() == '/') return Status::Error("server.capacity_state must name a file: '" + path + "'");
  const std::string dir = Dir(path);
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::Error("server.capacity_state " + path + ": its directory " + dir + " is not writable (" +
                         std::strerror(errno) + ")");
  return Status::Ok();
}

}  // namespace veil
