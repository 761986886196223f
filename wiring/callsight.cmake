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
# the two and is recompiled; no other is.  A config that picks single
# functions (exclude-func, include-func) or names a header is decided on
# the call graph, which callsight compiles from T's sources with T's
# include directories, definitions and options (GCC 10 or newer), and a
# source with some functions left out goes into an object library of its
# own, with GCC's exclude list; then an edit of a source reconfigures too.
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

# _callsight_graph_cmd(T LANG VAR): how T's LANG sources compile, for the
# call graph that function-level directives need (run by callsight at
# configure time; generator expressions cannot be evaluated then and are
# left out, with a warning).
function(_callsight_graph_cmd target lang var)
  set(cmd "${CMAKE_${lang}_COMPILER} ${CMAKE_${lang}_FLAGS}")
  set(skipped)
  foreach(p INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS)
    get_target_property(items ${target} ${p})
    if(NOT items)
      continue()
    endif()
    foreach(i IN LISTS items)
      if(i MATCHES "\\$<")
        list(APPEND skipped "${i}")
      elseif(p STREQUAL "INCLUDE_DIRECTORIES")
        string(APPEND cmd " '-I${i}'")
      elseif(p STREQUAL "COMPILE_DEFINITIONS")
        string(APPEND cmd " '-D${i}'")
      else()
        string(APPEND cmd " '${i}'")
      endif()
    endforeach()
  endforeach()
  if(skipped)
    message(WARNING "callsight: ${target}'s call graph is compiled without ${skipped} "
                    "(generator expressions are not known at configure time)")
  endif()
  set(${var} "${cmd}" PARENT_SCOPE)
endfunction()

# _callsight_choose(T SOURCES): split SOURCES by trace.config into
# _cs_hooked (instrumented), _cs_plain (not) and, for sources that need
# single functions left out (exclude-func, include-func), _cs_groups: one
# id per distinct exclude-list option, with _cs_<id>_srcs and _cs_<id>_opt.
# All hooked without a config.  (Not "on"/"off": if(off) is the constant
# OFF, whatever the variable holds.)
function(_callsight_choose target srcs)
  set(yes)
  set(no)
  set(groups)
  if(NOT EXISTS "${CALLSIGHT_CONFIG}")
    set(_cs_hooked "${srcs}" PARENT_SCOPE)
    set(_cs_plain "" PARENT_SCOPE)
    set(_cs_groups "" PARENT_SCOPE)
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
  set(files)
  foreach(s IN LISTS srcs)
    if(s MATCHES "^\\$<")
      list(APPEND yes "${s}") # a generator expression: not a file to choose by
    else()
      list(APPEND files "${s}")
    endif()
  endforeach()
  _callsight_graph_cmd(${target} C gcc)
  set(gcxx "")
  if(CMAKE_CXX_COMPILER)
    _callsight_graph_cmd(${target} CXX gcxx)
  endif()
  # One call for every source: a function's subtree crosses files.
  execute_process(COMMAND "${CALLSIGHT_TOOL}" flags --config "${CALLSIGHT_CONFIG}" --format list
                          --graph-cc "${gcc}" --graph-cxx "${gcxx}"
                          --graph-dir "${CMAKE_CURRENT_BINARY_DIR}/callsight-obj/${target}" -- ${files}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(err)
    message(STATUS "${err}") # the graph's progress, or a warning about a kept function
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "callsight flags failed (above)")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line STREQUAL "#\tgraph")
      # The choice follows the code too: an edit of a source reconfigures.
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${files})
      continue()
    endif()
    if(NOT line MATCHES "^([^\t]*)\t([01])\t(.*)$")
      continue()
    endif()
    set(s "${CMAKE_MATCH_1}")
    set(opt "${CMAKE_MATCH_3}")
    if(CMAKE_MATCH_2 STREQUAL "0")
      list(APPEND no "${s}")
    elseif(opt STREQUAL "")
      list(APPEND yes "${s}")
    else()
      string(MD5 id "${opt}")
      string(SUBSTRING "${id}" 0 10 id)
      if(NOT id IN_LIST groups)
        list(APPEND groups ${id})
        set(_cs_${id}_opt "${opt}" PARENT_SCOPE)
      endif()
      list(APPEND _g_${id} "${s}")
    endif()
  endforeach()
  foreach(id IN LISTS groups)
    set(_cs_${id}_srcs "${_g_${id}}" PARENT_SCOPE)
  endforeach()
  set(_cs_hooked "${yes}" PARENT_SCOPE)
  set(_cs_plain "${no}" PARENT_SCOPE)
  set(_cs_groups "${groups}" PARENT_SCOPE)
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
  _callsight_choose(${target} "${abs_srcs}")
  set(t ${target}_instr)
  set(objs)
  if(_cs_plain)
    # The sources trace.config leaves out: T's flags, no hooks.
    add_library(${t}_plain OBJECT EXCLUDE_FROM_ALL ${_cs_plain})
    _callsight_like(${t}_plain ${target})
    list(APPEND objs $<TARGET_OBJECTS:${t}_plain>)
  endif()
  foreach(id IN LISTS _cs_groups)
    # Sources with some functions left out: named by their option, so a
    # source is recompiled only when its own option changes.
    add_library(${t}_${id} OBJECT EXCLUDE_FROM_ALL ${_cs_${id}_srcs})
    _callsight_like(${t}_${id} ${target})
    target_compile_options(${t}_${id} PRIVATE ${CALLSIGHT_INSTR_FLAGS} "${_cs_${id}_opt}")
    list(APPEND objs $<TARGET_OBJECTS:${t}_${id}>)
  endforeach()
  add_executable(${t} EXCLUDE_FROM_ALL ${_cs_hooked} ${objs} $<TARGET_OBJECTS:callsight_runtime>)
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
