# The layers the build enforces: a file compiled with a layer's include directories (those of its
# CMake target, as the build gives them) finds that layer's headers and those of the layers below
# it, and no header of a layer above: the model's files cannot include the report's, the report's
# cannot include the views'.
# Usage: cmake -DCXX=... -DLAYER=model|report -DINCLUDES="dir;dir" -DWORK=dir
#              [-DVIEWS_INCLUDES="dir;dir" -DVIEWS_ROOT=dir] -P check_layers.cmake
# For the report, every header under VIEWS_ROOT/views/ is forbidden, and each must compile with
# VIEWS_INCLUDES (the views target's), so that it fails for the report because of where it is.
file(MAKE_DIRECTORY ${WORK}/${LAYER})
function(compile header expect_ok includes what)
  set(flags -std=c++17 -fsyntax-only)
  foreach(d ${includes})
    list(APPEND flags -I${d})
  endforeach()
  string(MAKE_C_IDENTIFIER ${header} id)
  set(src ${WORK}/${LAYER}/${id}.cpp)
  file(WRITE ${src} "#include \"${header}\"\nint main() { return 0; }\n")
  execute_process(COMMAND ${CXX} ${flags} ${src} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}'s include directories do not find its own header ${header}:\n${out}")
  elseif(NOT expect_ok)
    if(rc EQUAL 0)
      message(FATAL_ERROR "a ${LAYER} file could include ${header}, a header of a layer above the ${LAYER}")
    endif()
    string(FIND "${out}" "${header}" named)
    if(named EQUAL -1)
      message(FATAL_ERROR "including ${header} failed, but not for the header:\n${out}")
    endif()
  endif()
endfunction()

if(LAYER STREQUAL "model")
  set(own gmem/profiler/analysis.hpp gmem/profiler/pool_model.hpp gmem/profiler/graph_alone.hpp
          gmem/profiler/diagnostics.hpp gmem/profiler/lifetime.hpp gmem/profiler/model_results.hpp)
  set(above gmem/profiler/report.hpp gmem/profiler/recording.hpp gmem/profiler/report_io.hpp
            gmem/profiler/pool_analysis.hpp views/show.hpp record/recorder.hpp gmem/graph.hpp)
elseif(LAYER STREQUAL "report")
  # Its public headers, its private ones (beside its sources) and the model's below it.
  set(own gmem/profiler/report.hpp gmem/profiler/recording.hpp gmem/profiler/report_io.hpp
          gmem/profiler/compare.hpp gmem/profiler/pool_analysis.hpp report/report_json.hpp
          report/recording_json.hpp report/fields.hpp report/processes.hpp gmem/profiler/analysis.hpp)
  file(GLOB above RELATIVE ${VIEWS_ROOT} ${VIEWS_ROOT}/views/*.hpp)
  if(NOT above)
    message(FATAL_ERROR "no view header under ${VIEWS_ROOT}/views")
  endif()
  foreach(h ${above})
    compile(${h} TRUE "${VIEWS_INCLUDES}" "the views")
  endforeach()
  list(APPEND above record/recorder.hpp)
else()
  message(FATAL_ERROR "LAYER is model or report, not '${LAYER}'")
endif()
foreach(h ${own})
  compile(${h} TRUE "${INCLUDES}" "the ${LAYER}")
endforeach()
foreach(h ${above})
  compile(${h} FALSE "${INCLUDES}" "the ${LAYER}")
endforeach()
list(JOIN above ", " listed)
message(STATUS "the ${LAYER}'s include directories: its own headers and those below, not ${listed}")
