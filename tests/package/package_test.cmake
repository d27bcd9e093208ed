# ctest script (cmake -P): installs the already-built gmem tree to a temporary prefix, then
# configures, builds and runs tests/package/consumer against the installed package.
# Inputs: GMEM_BINARY_DIR, GMEM_SOURCE_DIR, WORK_DIR, CUDA_ROOT, GENERATOR, CXX.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "package test: ${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Install from the current build tree (ctest runs after the build; nothing is rebuilt).
step("install" ${CMAKE_COMMAND} --install ${GMEM_BINARY_DIR} --prefix ${prefix})
foreach(f include/gmem/gmem.hpp include/gmem/detail/graph_ledger.hpp
          include/gmem/profiler/report.hpp bin/gmemprof lib/libgmem_alloc.a
          lib/libgmem_profiler.a lib/cmake/gmem/gmemConfig.cmake
          lib/cmake/gmem/gmemConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "package test: the install has no ${f}")
  endif()
endforeach()
# Internal headers stay out of the install.
foreach(f include/suite/runner.hpp include/gmemprof/commands.hpp include/report/show.hpp include/views/show.hpp)
  if(EXISTS ${prefix}/${f})
    message(FATAL_ERROR "package test: the install holds the internal header ${f}")
  endif()
endforeach()
step("installed gmemprof --version" ${prefix}/bin/gmemprof --version)
# The recording library is installed where the installed gmemprof finds it, and
# `gmemprof info` says where it is and whether it loads (here, without a driver, it does not).
if(EXISTS ${GMEM_BINARY_DIR}/record/libgmem_record.so)
  file(GLOB_RECURSE installed_record ${prefix}/lib*/libgmem_record.so)
  if(NOT installed_record)
    message(FATAL_ERROR "package test: the install has no libgmem_record.so")
  endif()
  # Exit 0 with a GPU, 3 without one (gmemprof's status for no usable GPU): both describe.
  execute_process(COMMAND ${prefix}/bin/gmemprof info RESULT_VARIABLE rc OUTPUT_VARIABLE step_output
                  ERROR_VARIABLE step_output)
  if(NOT rc EQUAL 0 AND NOT rc EQUAL 3)
    message(FATAL_ERROR "package test: installed gmemprof info failed (${rc}):\n${step_output}")
  endif()
  file(REAL_PATH ${installed_record} installed_record)
  string(FIND "${step_output}" "recording library (gmemprof record): ${installed_record} (" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "package test: the installed gmemprof info does not name the installed "
                        "recording library ${installed_record}:\n${step_output}")
  endif()
  message(STATUS "package test: ${step_output}")
endif()

step("configure the consumer" ${CMAKE_COMMAND} -S ${GMEM_SOURCE_DIR}/tests/package/consumer
     -B ${WORK_DIR}/consumer -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
     -DCMAKE_PREFIX_PATH=${prefix} -DCUDAToolkit_ROOT=${CUDA_ROOT})
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
step("run the consumer" ${WORK_DIR}/consumer/gmem_consumer)
message(STATUS "${step_output}")
