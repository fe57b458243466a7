// GET /v1/status as a typed message (common/api/status.h): it encodes and
// decodes to itself, reads an older daemon's shape, and names the path of a
// mistyped field.
#include <catch2/catch.hpp>

#include "common/api/status.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

namespace {

// GET /v1/status as daemon/daemon.cpp builds it (abridged config and backends).
const Json kStatus = Json::parse(R"({
    "api": 1, "version": "0.9.0",
    "instance": {"name": "aaaa1111", "resource_prefix": "disksweep-aaaa1111-",
                 "source": "generated"},
    "accel": "kvm", "accel_reason": "probed",
    "hypervisor": {"backend": "libvirt", "uri": "qemu:///system"},
    "versions": {"libvirt": "9.0.0", "qemu": "7.2.0"},
    "backends": {"storages": [{"name": "file", "produces": "file"}]},
    "hosts": [{"name": "local", "kind": "libvirt", "detail": "qemu:///system", "parallel": 2,
               "accel": "kvm", "accel_reason": "probed", "versions": {"qemu": "7.2.0"},
               "connection": {"state": "connected", "reconnects": 0},
               "placement": {"busy": 0, "parallel": 2, "consecutive_failures": 0,
                             "backed_off_until": null, "last_failure": null}}],
    "guest_image": {"ready": false, "problem": "no image"},
    "guest_images": [{"suite": "bookworm", "variant": "", "ready": true, "kernel": "6.1.0"},
                     {"suite": "trixie", "variant": "", "ready": false, "problem": "missing"}],
    "config": {"image_dir": "/i", "database": "/d.db", "max_parallel_runs": 2}})");

}  // namespace

TEST_CASE("a status reply reads the daemon's shape and round-trips", "[api][status]") {
    const auto status = decoded<StatusReply>(kStatus);
    CHECK(status.instance->source == "generated");
    REQUIRE(status.hosts.size() == 1);
    CHECK(status.hosts[0].parallel == 2);
    CHECK(status.guest_images.at(1).problem == "missing");
    CHECK_FALSE(status.guest_images.at(0).problem);
    CHECK(to_json(status) == kStatus);
    CHECK(round_trip(status) == status);
}

TEST_CASE("an older daemon's status reads, absent fields as absent", "[api][status]") {
    // Before instances and guest suites; an API without a status source
    // answers its versions alone.
    const auto older = decoded<StatusReply>(Json::parse(R"({"api": 1, "version": "0.1.0",
        "hosts": [{"name": "local"}]})"));
    CHECK_FALSE(older.instance);
    CHECK(older.guest_images.empty());
    CHECK_FALSE(older.hosts.at(0).parallel);
    const Json versions_only = {{"api", 1}, {"version", "0.1.0"}};
    CHECK(to_json(decoded<StatusReply>(versions_only)) == versions_only);
}

TEST_CASE("a mistyped status field names its path", "[api][status]") {
    CHECK(decode_error<StatusReply>(
              Json::parse(R"({"hosts": [{"name": "a"}, {"parallel": "2"}]})")) ==
          "hosts[1].parallel: expected an integer, got string");
    CHECK(decode_error<StatusReply>(Json::parse(R"({"guest_images": [{"ready": 1}]})")) ==
          "guest_images[0].ready: expected a boolean, got number");
    CHECK(decode_error<StatusReply>(Json::parse(R"({"instance": "aaaa"})")) ==
          "instance: expected an object, got string");
}

}  // namespace ds::api
