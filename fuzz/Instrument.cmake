# Included by the top-level CMakeLists.txt when DISKSWEEP_FUZZ is ON, before
# any target is defined: every object of this build tree (the project's
# libraries the fuzz targets link included) gets ASan + UBSan and libFuzzer's
# coverage instrumentation. A normal (gcc) build never includes this file.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DISKSWEEP_FUZZ needs clang (libFuzzer), e.g. -DCMAKE_CXX_COMPILER=clang++-14; "
                      "this build uses ${CMAKE_CXX_COMPILER_ID}")
endif()

# UBSan findings abort (-fno-sanitize-recover) so libFuzzer counts them as
# crashes and saves the input, instead of printing and carrying on.
set(DISKSWEEP_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all)
# Line tables are all a sanitizer's stack trace needs; full -g would make the
# cold build (CI) much slower.
add_compile_options(${DISKSWEEP_SANITIZERS} -fsanitize=fuzzer-no-link -fno-omit-frame-pointer
                    -gline-tables-only)
add_link_options(${DISKSWEEP_SANITIZERS})
