# Embeds the default detector (YuNet 2023mar) into the veil binary at build
# time. The model file is never committed: it is read from VEIL_ASSETS (or
# VEIL_EMBED_MODEL) and its sha256 is checked here and again at load time.
set(VEIL_YUNET_SHA256 "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4")
set(VEIL_EMBED_MODEL "${VEIL_ASSETS}/models/face_detection_yunet_2023mar.onnx" CACHE FILEPATH
    "YuNet 2023mar ONNX to embed as the default detector ('' to build without one)")
set(VEIL_HAVE_EMBEDDED_MODEL 0)
if(VEIL_EMBED_MODEL)
  if(NOT EXISTS "${VEIL_EMBED_MODEL}")
    message(FATAL_ERROR "veil: default detector model not found at ${VEIL_EMBED_MODEL}.\n"
      "Get face_detection_yunet_2023mar.onnx (see README 'Models') and pass -DVEIL_ASSETS=<dir> "
      "or -DVEIL_EMBED_MODEL=<file>, or -DVEIL_EMBED_MODEL= to build without an embedded model.")
  endif()
  file(SHA256 "${VEIL_EMBED_MODEL}" _sha)
  if(NOT _sha STREQUAL VEIL_YUNET_SHA256)
    message(FATAL_ERROR "veil: ${VEIL_EMBED_MODEL} has sha256 ${_sha}, expected ${VEIL_YUNET_SHA256}")
  endif()
  set(VEIL_HAVE_EMBEDDED_MODEL 1)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/embedded_model.S.in ${CMAKE_BINARY_DIR}/embedded_model.S @ONLY)
endif()
