// The job's block object and the sysfs writes that carry it out, on a fake
// sysfs tree whose "kernel" (FakeGuestSystem) can refuse a value.
#include "guestagent/block_tuning.h"

#include "support/fakes/agent_fakes.h"

using namespace ds::agent;
using namespace ds::agent::testing;
using ds::Json;
using namespace std::chrono_literals;

TEST_CASE("block tuning: the job's block object", "[block]") {
    CHECK(parse_block_tuning(nullptr).value().empty());
    const Json null_block = nullptr;
    CHECK(parse_block_tuning(&null_block).value().empty());
    const Json empty = Json::object();
    CHECK(parse_block_tuning(&empty).value().empty());

    const Json full = {{"scheduler", "mq-deadline"}, {"read_ahead_kb", 0}, {"nr_requests", 32}};
    auto parsed = parse_block_tuning(&full);
    REQUIRE(parsed.ok());
    CHECK(*parsed == BlockTuning{"mq-deadline", 0, 32});

    auto refused = [](const Json& block) {
        auto result = parse_block_tuning(&block);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == ds::errc::kInvalidArgument);
        return result.error().message;
    };
    CHECK(refused(Json::array()) == "job.block: is a array, expected an object");
    CHECK(refused({{"read_ahead_kb", -1}}) ==
          "job.block.read_ahead_kb: is -1, expected an integer >= 0");
    CHECK(refused({{"nr_requests", "64"}}) ==
          "job.block.nr_requests: is \"64\", expected an integer >= 1");
    CHECK(refused({{"scheduler", "../bfq"}}).find("job.block.scheduler") == 0);
    CHECK(refused({{"scheduler", ""}}).find("job.block.scheduler") == 0);
    CHECK(refused({{"rq_affinity", 2}}) ==
          "job.block.rq_affinity: unknown block setting; known: scheduler, read_ahead_kb, "
          "nr_requests");
}

TEST_CASE("block tuning: scheduler modules", "[block]") {
    CHECK(scheduler_module("bfq") == "bfq");
    CHECK(scheduler_module("kyber") == "kyber-iosched");
    CHECK(scheduler_module("mq-deadline") == "mq-deadline");
    CHECK(scheduler_module("none").empty());
}

TEST_CASE("block tuning: writes go to the disk's queue, scheduler first", "[block]") {
    FakeGuestTree tree;
    FakeProcessRunner runner;
    FakeGuestSystem system{tree.proc()};
    std::vector<std::string> notes;
    const auto note = [&notes](const std::string& line) { notes.push_back(line); };
    const auto queue = tree.sys() / "block/sdb/queue";

    SECTION("all three, the scheduler already offered") {
        REQUIRE(
            apply_block_tuning({"kyber", 4096, 16}, "sdb", tree.roots(), system, runner, 10s, note)
                .ok());
        CHECK(read_text(queue / "scheduler") == "mq-deadline [kyber] none\n");
        CHECK(read_text(queue / "read_ahead_kb") == "4096\n");
        CHECK(read_text(queue / "nr_requests") == "16\n");
        CHECK(system.attribute_writes.front().second == "kyber");
        CHECK(runner.commands().empty());
        CHECK(notes.size() == 3);
    }
    SECTION("only what was asked") {
        REQUIRE(apply_block_tuning({std::nullopt, 256, std::nullopt}, "sdb", tree.roots(), system,
                                   runner, 10s, note)
                    .ok());
        REQUIRE(system.attribute_writes.size() == 1);
        CHECK(system.attribute_writes[0].first == (queue / "read_ahead_kb").string());
        CHECK(read_text(queue / "scheduler") == "mq-deadline kyber [none]\n");
    }
    SECTION("a missing scheduler is loaded first; refused writes stop the tuning") {
        auto failed = apply_block_tuning({"bfq", std::nullopt, 64}, "sdb", tree.roots(), system,
                                         runner, 10s, note);
        REQUIRE_FALSE(failed.ok());
        CHECK(runner.commands() == std::vector<std::vector<std::string>>{{"modprobe", "bfq"}});
        CHECK(failed.error().code == ds::errc::kIo);
        CHECK(failed.error().message == "cannot write 'bfq' to " + (queue / "scheduler").string() +
                                            ": Invalid argument (offered: mq-deadline kyber none)");
        CHECK(system.attribute_writes.size() == 1);  // nr_requests not attempted
    }
    SECTION("a disk without that attribute") {
        auto failed = apply_block_tuning({std::nullopt, 128, std::nullopt}, "sdz", tree.roots(),
                                         system, runner, 10s, note);
        REQUIRE_FALSE(failed.ok());
        CHECK(failed.error().message.find("No such file or directory") != std::string::npos);
    }
}
