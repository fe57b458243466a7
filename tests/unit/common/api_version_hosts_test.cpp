// GET /v1/version, GET /v1/hosts/check and POST /v1/sweeps/ID/cancel as
// typed messages (common/api/): each encodes and decodes to itself, reads
// the daemon's shape, and names the path of a mistyped field.
#include <catch2/catch.hpp>

#include "common/api/hosts.h"
#include "common/api/sweeps.h"
#include "common/api/version.h"
#include "unit/api_messages.h"

namespace ds::api {

using test::decode_error;
using test::decoded;
using test::round_trip;

TEST_CASE("a version reply round-trips and reads the daemon's shape", "[api][version]") {
    const VersionReply reply{.api = 1, .version = "0.9.0", .capabilities = {"sweeps", "events"}};
    CHECK(round_trip(reply) == reply);
    CHECK(to_json(reply) == Json::parse(R"({"api": 1, "version": "0.9.0",
                                            "capabilities": ["sweeps", "events"]})"));

    // An older daemon's answer without capabilities still reads.
    const auto older = decoded<VersionReply>(Json::parse(R"({"api": 1, "version": "0.1.0"})"));
    CHECK(older.capabilities.empty());
    CHECK(older.version == "0.1.0");
}

TEST_CASE("a mistyped version field names its path", "[api][version]") {
    CHECK(decode_error<VersionReply>(Json::parse(R"({"api": "one"})")) ==
          "api: expected an integer, got string");
    CHECK(decode_error<VersionReply>(Json::parse(R"({"capabilities": ["a", 2]})")) ==
          "capabilities[1]: expected a string, got number");
    CHECK(decode_error<VersionReply>(Json::array()) == "expected an object, got array");
}

TEST_CASE("a host check reply round-trips, a libvirt host's and a Proxmox host's", "[api][hosts]") {
    // Hypervisor::reachability() of a libvirt host: its state only.
    const Json libvirt = Json::parse(R"({"host": "local", "check": {"state": "connected"}})");
    const auto connected = decoded<HostCheckReply>(libvirt);
    CHECK(connected.check.state == "connected");
    CHECK_FALSE(connected.check.ready);
    CHECK(to_json(connected) == libvirt);

    // ProxmoxHypervisor::check_host().
    const Json proxmox = Json::parse(R"({"host": "pve/node1", "check": {
        "proxmox": "8.2.4", "rules": "8.x", "ready": false,
        "missing": [{"path": "/vms", "privileges": ["VM.Audit"], "need": "required",
                     "used_by": "listing VMs"}],
        "monitor": "allowed", "report": "grant: pveum ...\n"}})");
    const auto pve = decoded<HostCheckReply>(proxmox);
    CHECK(pve.check.ready == false);
    CHECK(to_json(pve) == proxmox);
    CHECK(round_trip(pve) == pve);
}

TEST_CASE("a mistyped host check field names its path", "[api][hosts]") {
    CHECK(decode_error<HostCheckReply>(Json::parse(R"({"check": {"ready": "yes"}})")) ==
          "check.ready: expected a boolean, got string");
}

TEST_CASE("a cancel reply round-trips with the sweep it shows", "[api][sweeps]") {
    // POST /v1/sweeps/4/cancel as the daemon answers it.
    const Json daemon = Json::parse(R"({"sweep": {
        "id": 4, "name": "seed", "status": "cancelled", "created_at": "2026-11-29T20:00:00Z",
        "started_at": "2026-11-29T20:00:01Z", "finished_at": null, "total_runs": 2,
        "spec_source": "seed.toml", "spec_toml": "name = \"seed\"\n", "dropped": [],
        "varying_axes": ["cache"],
        "counts": {"pending": 0, "running": 0, "succeeded": 0, "failed": 0,
                   "timed_out": 0, "cancelled": 2}}})");
    const auto reply = decoded<CancelReply>(daemon);
    CHECK(reply.sweep.counts->cancelled == 2);
    CHECK_FALSE(reply.sweep.finished_at);
    CHECK(to_json(reply) == daemon);
    CHECK(round_trip(reply) == reply);

    CHECK(decode_error<CancelReply>(Json::parse(R"({"sweep": {"counts": {"failed": "1"}}})")) ==
          "sweep.counts.failed: expected an integer, got string");
}

}  // namespace ds::api
