// Skipping a test that cannot run on this host (not root, a tool or the
// guest image missing): the test process ends with DISKSWEEP_TEST_SKIP_CODE,
// which tests/CMakeLists.txt defines once and sets as SKIP_RETURN_CODE on
// every ctest test, so ctest reports the test as skipped, never as passed.
// scripts/check-skips.sh then fails CI on any skip that
// tests/allowed-skips.txt does not allow.
//
// Contract: call skip_test() before the test asserts anything and before it
// creates anything it would have to clean up. It ends the process at once:
// stack objects are not destroyed, and a CHECK that failed earlier would be
// reported as a skip. ctest runs each Catch2 test case in its own process
// (catch_discover_tests), so a skip ends only that test case; a test binary
// run by hand stops at the first skip.
#pragma once

#include <cstdlib>
#include <iostream>
#include <string_view>

#ifndef DISKSWEEP_TEST_SKIP_CODE
#error "DISKSWEEP_TEST_SKIP_CODE comes from tests/CMakeLists.txt (link the test_skip target)"
#endif

namespace ds::test {

inline constexpr int kSkipExitCode = DISKSWEEP_TEST_SKIP_CODE;

// Prints "SKIPPED: <reason>" and ends the test process as skipped.
[[noreturn]] inline void skip_test(std::string_view reason) {
    std::cout << "SKIPPED: " << reason << std::endl;
    std::exit(kSkipExitCode);
}

}  // namespace ds::test
