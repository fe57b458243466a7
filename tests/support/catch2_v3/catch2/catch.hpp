// Catch2 v2's header as the tests include it, over Catch2 v3. Debian 12
// ships Catch2 2.13 and Debian 13 only 3.x; the tests are written against
// v2 (`#include <catch2/catch.hpp>`, `Catch::Contains`, unqualified
// `Approx`, CATCH_CONFIG_MAIN), so that they build unchanged on both.
// tests/CMakeLists.txt puts this directory first on the tests' include path
// only when find_package(Catch2) found v3; on v2 the real header is used.
//
// Contract: every v2 name the tests use maps to the v3 matcher that checks
// the same thing. Only the names the tests use are mapped; a test using
// another v2-only name fails to build on Debian 13, which says what to add.
#pragma once

#include <catch2/catch_all.hpp>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

// v2 declares Approx at global scope; v3 keeps it in Catch.
using Catch::Approx;

namespace Catch {

// v2's string matchers were reachable as Catch::NAME (v2 has `using
// namespace Matchers` inside Catch); v3 has them only in Catch::Matchers,
// and renamed the substring matcher to ContainsSubstring.
using Matchers::EndsWith;
using Matchers::Matches;
using Matchers::StartsWith;

inline Matchers::StringContainsMatcher Contains(std::string const& needle,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
    return Matchers::ContainsSubstring(needle, sensitivity);
}

namespace Matchers {

// `using Catch::Matchers::Contains;` then `Contains("text")` meant the
// substring matcher in v2; in v3 Matchers::Contains is the range matcher
// (is this element in the range), which would look for a char array in a
// string. These overloads take what converts to a string view; they have
// v3's parameter lists (one forwarding reference, or two) and are
// constrained where v3's are not, so overload resolution prefers them for
// text and keeps v3's for every other element type.
template <typename Text>
concept ContainsText = std::convertible_to<Text, std::string_view> &&
    !Detail::is_matcher<std::remove_cvref_t<Text>>::value;

template <typename Text>
requires ContainsText<Text> StringContainsMatcher Contains(Text&& needle) {
    return ContainsSubstring(std::string(std::string_view(needle)));
}

template <typename Text, typename Sensitivity>
requires ContainsText<Text> && std::same_as<std::remove_cvref_t<Sensitivity>, CaseSensitive>
    StringContainsMatcher Contains(Text&& needle, Sensitivity&& sensitivity) {
    return ContainsSubstring(std::string(std::string_view(needle)), sensitivity);
}

}  // namespace Matchers
}  // namespace Catch

// v2's single header defined main() in the one source that set
// CATCH_CONFIG_MAIN (tests/catch_main.cpp); v3 builds it into Catch2WithMain,
// which the tests do not link, so it is defined here as v2 did.
#ifdef CATCH_CONFIG_MAIN
int main(int argc, char* argv[]) {
    return Catch::Session().run(argc, argv);
}
#endif
