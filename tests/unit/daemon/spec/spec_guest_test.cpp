// `[guest] suite`: which Debian release the runs' guest image is
// (common/guest_suite.h), its errors, and its refusal on a backend that
// boots its own template.
#include <catch2/catch.hpp>

#include "daemon/spec/spec.h"

using namespace ds;
using Catch::Matchers::Contains;

namespace {

std::string spec_with(const std::string& extra) {
    return "name = \"guests\"\n" + extra + "\n[[workload]]\nkind = \"fio\"\n";
}

}  // namespace

TEST_CASE("spec: [guest] suite picks the guest's Debian release, bookworm by default",
          "[spec][guest]") {
    auto plain = parse_sweep_spec(spec_with(""), "plain.toml");
    REQUIRE(plain.ok());
    CHECK(plain->guest_suite == "bookworm");

    auto trixie = parse_sweep_spec(spec_with("[guest]\nsuite = \"trixie\""), "trixie.toml");
    REQUIRE(trixie.ok());
    CHECK(trixie->guest_suite == "trixie");
    CHECK(image_subdir({trixie->guest_suite, "mariadb"}) == "trixie/mariadb");
    CHECK(image_subdir({"bookworm", "mariadb"}) == "mariadb");
    CHECK(image_subdir({}) == "");
}

TEST_CASE("spec: a bad [guest] names the key and the suites there are", "[spec][guest]") {
    auto unknown = parse_sweep_spec(spec_with("[guest]\nsuite = \"trixy\""), "bad.toml");
    REQUIRE_FALSE(unknown.ok());
    CHECK_THAT(unknown.error().message, Contains("bad.toml:3"));
    CHECK_THAT(unknown.error().message,
               Contains("unknown guest suite 'trixy'; suites: bookworm, trixie."));
    CHECK_THAT(unknown.error().message, Contains("Did you mean 'trixie'?"));

    auto number = parse_sweep_spec(spec_with("[guest]\nsuite = 13"), "bad.toml");
    REQUIRE_FALSE(number.ok());
    CHECK_THAT(number.error().message, Contains("suite"));
    CHECK_THAT(number.error().message, Contains("a string"));

    auto other_key = parse_sweep_spec(spec_with("[guest]\nrelease = \"13\""), "bad.toml");
    REQUIRE_FALSE(other_key.ok());
    CHECK_THAT(other_key.error().message, Contains("release"));
    CHECK_THAT(other_key.error().message, Contains("suite"));

    auto not_table = parse_sweep_spec(spec_with("guest = \"trixie\""), "bad.toml");
    REQUIRE_FALSE(not_table.ok());
    CHECK_THAT(not_table.error().message, Contains("a table ([guest])"));
}

TEST_CASE("spec: [guest] is refused where the template decides the guest", "[spec][guest]") {
    auto proxmox = parse_sweep_spec(
        spec_with("[hypervisor]\nbackend = \"proxmox\"\n[guest]\nsuite = \"trixie\""), "pve.toml");
    REQUIRE_FALSE(proxmox.ok());
    CHECK_THAT(proxmox.error().message, Contains("boots its template's guest"));
    CHECK_THAT(proxmox.error().message, Contains("scripts/pve-make-template.sh --from-image"));
}
