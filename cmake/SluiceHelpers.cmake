# Declarative helpers so each directory's CMakeLists.txt lists only its files and dependencies.

set(SLUICE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    # Designated initializers with defaulted members are our style; GCC 12 flags them anyway.
    -Wno-missing-field-initializers)
# clang checks every access to a member guarded by a Mutex (core/mutex.h); g++ has no such
# analysis, so scripts/thread_safety.sh runs clang over the g++ build's sources in the test command.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND SLUICE_WARNINGS -Wthread-safety)
endif()
if(SLUICE_WERROR)
  list(APPEND SLUICE_WARNINGS -Werror)
endif()

if(SLUICE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(SLUICE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(SLUICE_SANITIZE STREQUAL "fuzzer")
  # ASan+UBSan with libFuzzer's coverage everywhere; only the fuzz targets link its main().
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT SLUICE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SLUICE_SANITIZE must be '', 'address', 'thread' or 'fuzzer'")
endif()

# The server processes allocate with jemalloc (Debian's libjemalloc-dev) unless a sanitizer,
# which brings its own allocator, is on: grpc++ allocates several blocks per call, and under
# glibc's malloc a ShouldRateLimit call cost ~10 % more CPU (docs/benchmarks.md, "gRPC").
# SLUICE_JEMALLOC=OFF builds with the C library's malloc.
if(SLUICE_SANITIZE STREQUAL "")
  option(SLUICE_JEMALLOC "Link the server executables with jemalloc" ON)
else()
  set(SLUICE_JEMALLOC OFF)
endif()
if(SLUICE_JEMALLOC)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()

# sluice_use_jemalloc(target): the target's malloc is jemalloc's when SLUICE_JEMALLOC is on.
function(sluice_use_jemalloc target)
  if(SLUICE_JEMALLOC)
    target_link_libraries(${target} PRIVATE PkgConfig::JEMALLOC)
  endif()
endfunction()

# sluice_library(NAME name SOURCES a.cc b.cc DEPS other_target)
function(sluice_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SOURCES})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                                ${PROJECT_SOURCE_DIR}/src
                                                ${PROJECT_BINARY_DIR}/generated)
  target_compile_options(${ARG_NAME} PRIVATE ${SLUICE_WARNINGS})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# sluice_test(NAME name SOURCES a_test.cc DEPS lib [LABELS unit])
# One executable per module; registered with CTest under its name and labels.
function(sluice_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT SLUICE_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${SLUICE_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} rapidcheck rapidcheck_gtest
                                            GTest::gtest GTest::gmock GTest::gtest_main)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}"
                       ENVIRONMENT "SLUICE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# sluice_benchmark(NAME name SOURCES a_benchmark.cc DEPS lib)
# Registered with CTest (label "benchmark") as a brief run so no benchmark rots.
function(sluice_benchmark)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  if(NOT SLUICE_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${SLUICE_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --benchmark_min_time=0.01)
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS benchmark)
endfunction()
