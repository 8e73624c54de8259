# Debian splits OpenCV into per-module -dev packages; only libopencv-dev (which
# pulls in every module and GUI stack) ships OpenCVConfig.cmake. We link the
# four modules veil uses directly.
find_path(OpenCV_INCLUDE_DIR opencv2/dnn.hpp PATH_SUFFIXES opencv4 REQUIRED)
add_library(veil_opencv INTERFACE)
target_include_directories(veil_opencv SYSTEM INTERFACE ${OpenCV_INCLUDE_DIR})
foreach(m core imgproc imgcodecs dnn)
  find_library(OpenCV_${m}_LIB opencv_${m} REQUIRED)
  target_link_libraries(veil_opencv INTERFACE ${OpenCV_${m}_LIB})
endforeach()
