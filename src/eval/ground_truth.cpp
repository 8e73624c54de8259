#include "eval/ground_truth.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace veil {

Result<std::vector<GtImage>> LoadGroundTruth(const std::string& dir, int* skipped) {
  if (skipped) *skipped = 0;
  const std::string csv = dir + "/ground_truth.csv";
  std::ifstream in(csv);
  if (!in) return Status::Error("cannot open " + csv + " (is --faces a folder laid out like shared/assets/faces?)");
  std::string line;
  const std::string header = "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose";
  if (!std::getline(in, line) || line.rfind(header, 0) != 0)
    return Status::Error(csv + ": header must start with '" + header + "'");
  std::vector<GtImage> images;
  std::map<std::string, size_t> index;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (f.size() < 11) return Status::Error(csv + ":" + std::to_string(lineno) + ": expected at least 11 fields");
    int v[10];
    for (int i = 0; i < 10; ++i) {
      const std::string& s = f[i + 1];
      auto r = std::from_chars(s.data(), s.data() + s.size(), v[i]);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        return Status::Error(csv + ":" + std::to_string(lineno) + ": field " + std::to_string(i + 2) +
                             " is not an integer: '" + s + "'");
    }
    if (f[0].find("..") != std::string::npos || (!f[0].empty() && f[0][0] == '/'))
      return Status::Error(csv + ":" + std::to_string(lineno) + ": image path must stay inside the folder");
    auto [it, fresh] = index.emplace(f[0], images.size());
    if (fresh) images.push_back({(std::filesystem::path(dir) / f[0]).string(), {}});
    if (v[2] <= 0 || v[3] <= 0) {  // a degenerate box: no face to judge
      if (skipped) ++*skipped;
      continue;
    }
    GtFace face;
    face.box = {float(v[0]), float(v[1]), float(v[2]), float(v[3])};
    face.blur = v[4];
    face.expression = v[5];
    face.illumination = v[6];
    face.invalid = v[7];
    face.occlusion = v[8];
    face.pose = v[9];
    images[it->second].faces.push_back(face);
  }
  size_t faces = 0;
  for (const auto& im : images) faces += im.faces.size();
  if (faces == 0) return Status::Error(csv + ": no annotated faces");
  return images;
}

}  // namespace veil
