#include "server/web_pages.h"

extern "C" const char veil_web_operator[];
extern "C" const char veil_web_operator_end[];

namespace veil {

std::string_view OperatorPage() {
  return {veil_web_operator, size_t(veil_web_operator_end - veil_web_operator)};
}

}  // namespace veil
