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
# Choosing what gets hooks: with a trace.config beside your top
# CMakeLists.txt (docs/selection.md), only the sources it selects get
# CALLSIGHT_INSTR_FLAGS; the others are compiled, in an object library of
# their own, with no hooks at all.  The choice is made when CMake
# configures, by the callsight tool (`callsight flags`), and editing
# trace.config reconfigures: a source whose choice changed moves between
# the two and is recompiled; no other is.
#
# Settings (set them before the include to change them):
#   CALLSIGHT_INSTR_FLAGS   flags added to T's sources (-finstrument-functions;-g)
#   CALLSIGHT_CONFIG        the selection (${CMAKE_SOURCE_DIR}/trace.config); without
#                           it every source is instrumented and the tool is not needed
#   CALLSIGHT_TOOL          the callsight tool ($CALLSIGHT, else found on PATH)

include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.13)
  message(FATAL_ERROR "callsight.cmake needs CMake 3.13 or newer")
endif()
find_package(Threads REQUIRED)

set(CALLSIGHT_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(NOT DEFINED CALLSIGHT_INSTR_FLAGS)
  set(CALLSIGHT_INSTR_FLAGS -finstrument-functions -g)
endif()
if(NOT DEFINED CALLSIGHT_CONFIG)
  set(CALLSIGHT_CONFIG "${CMAKE_SOURCE_DIR}/trace.config")
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

# _callsight_like(NEW T): NEW compiles like T (standards, include
# directories, definitions, options).
function(_callsight_like new target)
  foreach(p C_STANDARD CXX_STANDARD C_EXTENSIONS CXX_EXTENSIONS)
    get_target_property(v ${target} ${p})
    if(NOT v STREQUAL "v-NOTFOUND")
      set_target_properties(${new} PROPERTIES ${p} "${v}")
    endif()
  endforeach()
  target_include_directories(${new} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
  target_compile_definitions(${new} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>)
  target_compile_options(${new} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_OPTIONS>)
endfunction()

# _callsight_choose(SOURCES HOOKED PLAIN): split SOURCES by trace.config into
# the variables HOOKED (instrumented) and PLAIN; all HOOKED without one.
# (Not "on"/"off": if(off) is the constant OFF, whatever the variable holds.)
function(_callsight_choose srcs on_var off_var)
  set(yes)
  set(no)
  if(NOT EXISTS "${CALLSIGHT_CONFIG}")
    set(${on_var} "${srcs}" PARENT_SCOPE)
    set(${off_var} "" PARENT_SCOPE)
    return()
  endif()
  if(NOT CALLSIGHT_TOOL AND DEFINED ENV{CALLSIGHT})
    set(CALLSIGHT_TOOL "$ENV{CALLSIGHT}") # as callsight.mk takes it
  endif()
  find_program(CALLSIGHT_TOOL callsight)
  if(NOT CALLSIGHT_TOOL)
    message(FATAL_ERROR "callsight: ${CALLSIGHT_CONFIG} needs the callsight tool on this build "
                        "host: set CALLSIGHT_TOOL=/path/to/callsight, or remove the file to "
                        "instrument every source")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CALLSIGHT_CONFIG}")
  foreach(s IN LISTS srcs)
    if(s MATCHES "^\\$<")
      list(APPEND yes "${s}") # a generator expression: not a file to choose by
      continue()
    endif()
    execute_process(COMMAND "${CALLSIGHT_TOOL}" flags --config "${CALLSIGHT_CONFIG}" --format raw -- "${s}"
                    OUTPUT_VARIABLE flags ERROR_VARIABLE err RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${err}")
    endif()
    if(flags)
      list(APPEND yes "${s}")
    else()
      list(APPEND no "${s}")
    endif()
  endforeach()
  set(${on_var} "${yes}" PARENT_SCOPE)
  set(${off_var} "${no}" PARENT_SCOPE)
endfunction()

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
  _callsight_choose("${abs_srcs}" hooked plain_srcs)
  set(t ${target}_instr)
  set(plain)
  if(plain_srcs)
    # The sources trace.config leaves out: T's flags, no hooks.
    add_library(${t}_plain OBJECT EXCLUDE_FROM_ALL ${plain_srcs})
    _callsight_like(${t}_plain ${target})
    set(plain $<TARGET_OBJECTS:${t}_plain>)
  endif()
  add_executable(${t} EXCLUDE_FROM_ALL ${hooked} ${plain} $<TARGET_OBJECTS:callsight_runtime>)
  set_target_properties(${t} PROPERTIES OUTPUT_NAME ${target}.instr)
  _callsight_like(${t} ${target})
  target_compile_options(${t} PRIVATE ${CALLSIGHT_INSTR_FLAGS})
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(libs)
    target_link_libraries(${t} PRIVATE ${libs})
  endif()
  target_link_libraries(${t} PRIVATE Threads::Threads)
  add_dependencies(instr ${t})
endfunction()
