// Locates the shared assets folder (models/, faces/, video/) through one setting.
#pragma once
#include <string>

namespace veil {
// VEIL_ASSETS environment variable if set, else the folder configured at build
// time (default: ../shared/assets next to the source tree).
std::string AssetsDir();
}  // namespace veil
