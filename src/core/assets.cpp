#include "core/assets.h"

#include <cstdlib>

#ifndef VEIL_DEFAULT_ASSETS
#define VEIL_DEFAULT_ASSETS "../shared/assets"
#endif

namespace veil {
std::string AssetsDir() {
  if (const char* e = std::getenv("VEIL_ASSETS"); e && *e) return e;
  return VEIL_DEFAULT_ASSETS;
}
}  // namespace veil
