// yunet_kernels.inc for any CPU, and the choice between it and the AVX2 build.
#define VEIL_YK_NS generic
#define VEIL_YK_ISA "generic"
#define VEIL_YK_GET YuNetKernelsGeneric
#include "vision/yunet_kernels.inc"

namespace veil {

const YuNetKernels& YuNetKernelsFor() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return YuNetKernelsAvx2();
#endif
  return YuNetKernelsGeneric();
}

}  // namespace veil
