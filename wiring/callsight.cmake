# callsight.cmake - the instrumented profile of this project, for CMake.
#
# Written by `callsight init`.  Your normal targets are untouched and keep
# zero hooks; callsight_instrument(T) adds a twin T.instr: T's sources,
# include directories, definitions, options and libraries, plus
# -finstrument-functions -g, linked with callsight's runtime (trace.c,
# compiled without instrumentation) and Threads.  At the end of your
# CMakeLists.txt (after T's target_link_libraries):
#
#     include(callsight/callsight.cmake)
#     callsight_instrument(app)
#
# `cmake --build BUILD --target instr` builds every T.instr, and when
# callsight/trace_stream.c is here (`callsight init --stream`) the device
# client trace_stream (it needs libzstd for the target).  The .instr
# targets are not part of `all`.  Cross-compiling works through your
# toolchain file like the rest of the project.
#
# Settings (set them before the include to change them):
#   CALLSIGHT_INSTR_FLAGS   flags added to T's sources (-finstrument-functions;-g)

include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.13)
  message(FATAL_ERROR "callsight.cmake needs CMake 3.13 or newer")
endif()
find_package(Threads REQUIRED)

set(CALLSIGHT_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(NOT DEFINED CALLSIGHT_INSTR_FLAGS)
  set(CALLSIGHT_INSTR_FLAGS -finstrument-functions -g)
endif()

# The runtime, compiled once and without instrumentation.
add_library(callsight_runtime OBJECT EXCLUDE_FROM_ALL "${CALLSIGHT_DIR}/trace.c")
target_compile_options(callsight_runtime PRIVATE -g)
add_custom_target(instr)

if(EXISTS "${CALLSIGHT_DIR}/trace_stream.c")
  find_path(CALLSIGHT_ZSTD_INCLUDE zstd.h)
  find_library(CALLSIGHT_ZSTD_LIBRARY zstd)
  add_executable(callsight_trace_stream EXCLUDE_FROM_ALL "${CALLSIGHT_DIR}/trace_stream.c")
  set_target_properties(callsight_trace_stream PROPERTIES OUTPUT_NAME trace_stream)
  add_dependencies(instr callsight_trace_stream)
  if(CALLSIGHT_ZSTD_INCLUDE AND CALLSIGHT_ZSTD_LIBRARY)
    target_include_directories(callsight_trace_stream PRIVATE "${CALLSIGHT_ZSTD_INCLUDE}")
    target_link_libraries(callsight_trace_stream PRIVATE "${CALLSIGHT_ZSTD_LIBRARY}")
  else()
    # Still valid zstd frames, of raw blocks: about 8x the bytes on the wire.
    target_compile_definitions(callsight_trace_stream PRIVATE TRACE_STREAM_NO_LIBZSTD)
    message(WARNING "callsight: no zstd.h/libzstd for this target; trace_stream is built "
                    "without compression (TRACE_STREAM_NO_LIBZSTD)")
  endif()
endif()

# callsight_instrument(T): the executable target T.instr beside T.
function(callsight_instrument target)
  get_target_property(srcs ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(abs_srcs)
  foreach(s IN LISTS srcs)
    if(IS_ABSOLUTE "${s}" OR s MATCHES "^\\$<")
      list(APPEND abs_srcs "${s}")
    else()
      list(APPEND abs_srcs "${dir}/${s}")
    endif()
  endforeach()
  set(t ${target}_instr)
  add_executable(${t} EXCLUDE_FROM_ALL ${abs_srcs} $<TARGET_OBJECTS:callsight_runtime>)
  set_target_properties(${t} PROPERTIES OUTPUT_NAME ${target}.instr)
  foreach(p C_STANDARD CXX_STANDARD C_EXTENSIONS CXX_EXTENSIONS)
    get_target_property(v ${target} ${p})
    if(NOT v STREQUAL "v-NOTFOUND")
      set_target_properties(${t} PROPERTIES ${p} "${v}")
    endif()
  endforeach()
  target_include_directories(${t} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
  target_compile_definitions(${t} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>)
  target_compile_options(${t} PRIVATE
    $<TARGET_PROPERTY:${target},COMPILE_OPTIONS> ${CALLSIGHT_INSTR_FLAGS})
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(libs)
    target_link_libraries(${t} PRIVATE ${libs})
  endif()
  target_link_libraries(${t} PRIVATE Threads::Threads)
  add_dependencies(instr ${t})
endfunction()
