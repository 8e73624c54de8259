#pragma once
#include <cstddef>
#include <string>

#include "core/status.h"

namespace veil {
std::string Sha256Hex(const void* data, size_t size);
Result<std::string> Sha256File(const std::string& path);
}  // namespace veil
