// The skip mechanism's probe (tests/support/skip_mechanism_test.sh): one
// test case that skips through skip_test(), one that passes.
#include <catch2/catch.hpp>

#include "support/skip.h"

TEST_CASE("the probe skips") {
    ds::test::skip_test("the probe always skips");
}

TEST_CASE("the probe passes") {
    CHECK(ds::test::kSkipExitCode != 0);
}
