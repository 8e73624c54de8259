// yunet_kernels.inc built with AVX2 and FMA (this file's compile options, src/CMakeLists.txt).
#if defined(__x86_64__) || defined(__i386__)
#define VEIL_YK_NS avx2
#define VEIL_YK_ISA "avx2"
#define VEIL_YK_GET YuNetKernelsAvx2
#include "vision/yunet_kernels.inc"
#else
#include "vision/yunet_kernels.h"
namespace veil {
const YuNetKernels& YuNetKernelsAvx2() {
  return YuNetKernelsGeneric();
}
}  // namespace veil
#endif
