// results apply warns from measured losses where they exist: the measured
// verdict in the snippet, the label warning kept for what the measurement
// did not cover, and the runs that speak for what is applied.
#include <catch2/catch.hpp>

#include "common/server_settings.h"
#include "daemon/apply/apply_snippets.h"
#include "daemon/apply/configuration_apply.h"
#include "support/disk_settings.h"
#include "support/durability_records.h"
#include "support/fakes/daemon_fakes.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using test::durability_record;
using test::durability_summary;

StorageConfig ext4(CacheMode cache, const std::string& mount_options = "") {
    return test::cache_and_filesystem(cache, "ext4", mount_options);
}

Workload ledger(const std::string& name, Json server = Json()) {
    Json params = {{"variant", server.is_null() ? "file" : "database"}};
    if (!server.is_null()) params["server"] = std::move(server);
    return Workload{name, "ledger", params, {}, 0};
}

RunRecord durability_run(const Workload& workload, Json durability) {
    RunRecord run = testing::planned_run(ext4(CacheMode::kNone), workload, 0, 0);
    run.status = RunStatus::kSucceeded;
    run.metrics = {{"commits_per_s", 50}};
    run.applied_settings = {{"durability", std::move(durability)}};
    return run;
}

DurabilityResult measured(Json durability, const Workload& workload = ledger("ledger")) {
    DurabilityResult result;
    result.add(durability_run(workload, std::move(durability)));
    return result;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        start = end == std::string::npos ? text.size() : end + 1;
    }
    return lines;
}

ApplyRequest fstab_with(std::optional<DurabilityResult> durability) {
    ApplyRequest request;
    request.format = ApplyFormat::kFstab;
    request.durability = std::move(durability);
    return request;
}

TEST_CASE("apply: measured losses are stated, and labels it did not cover still warn",
          "[apply][durability]") {
    // Host power cut measured, without the volatile-cache rule: it speaks for
    // cache=unsafe and data=writeback, not for barrier=0.
    const DurabilityResult lossy =
        measured(durability_record(durability_summary(50, 7, 12, 1.1), "host-power-cut", false));
    auto snippet = render_apply_snippet(ext4(CacheMode::kUnsafe, "barrier=0,data=writeback"),
                                        fstab_with(lossy));
    REQUIRE(snippet.ok());
    CHECK(snippet->measured_risks == std::vector<std::string>{"cache=unsafe", "data=writeback"});
    const auto lines = lines_of(snippet->text);
    REQUIRE(lines.size() > 2);
    CHECK(lines[0] ==
          "# WARNING: measured: lost acknowledged commits in 7 of 50 crash states (up to 12) "
          "(ledger workload 'ledger'; host-power-cut model; docs/durability.md): cache=unsafe, "
          "data=writeback");
    CHECK(lines[1] ==
          "# WARNING: trades durability for speed (a crash or power cut can lose or corrupt "
          "data): barrier=0 (not covered by the measurement)");
}

TEST_CASE("apply: warns from the worst case and states the host-writeback figure beside it",
          "[apply][durability]") {
    Json record = durability_record(durability_summary(16, 13, 300, 120), "host-power-cut");
    record["host_writeback"] = {{"window_s", 35.0},
                                {"summary", durability_summary(16, 0, 0, 0)},
                                {"states", Json::array()}};
    const DurabilityResult unsafe = measured(record);
    auto snippet = render_apply_snippet(ext4(CacheMode::kUnsafe, ""), fstab_with(unsafe));
    REQUIRE(snippet.ok());
    const auto lines = lines_of(snippet->text);
    REQUIRE(lines.size() > 2);
    CHECK(lines[0].rfind("# WARNING: measured: lost acknowledged commits in 13 of 16 crash "
                         "states (up to 300)",
                         0) == 0);
    CHECK(lines[1] ==
          "# typically, with the host writing back what is older than 35 s "
          "(vm.dirty_expire_centisecs + dirty_writeback_centisecs): kept every acknowledged "
          "commit in 16 crash states; the warning above is the worst case the mode permits");
}

TEST_CASE("apply: a measured zero loss is shown, and never silences a label",
          "[apply][durability]") {
    const DurabilityResult kept =
        measured(durability_record(durability_summary(50, 0, 0, 0), "flush-barriers", true));
    // A safe configuration: the measurement, no warning.
    auto safe = render_apply_snippet(ext4(CacheMode::kNone), fstab_with(kept));
    REQUIRE(safe.ok());
    CHECK(lines_of(safe->text)[0] ==
          "# measured: kept every acknowledged commit in 50 crash states (ledger workload "
          "'ledger'; flush-barriers model; volatile-cache rule; docs/durability.md)");
    CHECK(safe->text.find("WARNING") == std::string::npos);

    // nobarrier measured without loss under the volatile-cache rule: the label
    // still warns, saying so. cache=unsafe was not measured (flush barriers).
    auto labelled = render_apply_snippet(ext4(CacheMode::kUnsafe, "barrier=0"), fstab_with(kept));
    REQUIRE(labelled.ok());
    const auto lines = lines_of(labelled->text);
    CHECK(lines[0].rfind("# measured: kept every acknowledged commit in 50 crash states", 0) == 0);
    CHECK(lines[1] ==
          "# WARNING: trades durability for speed (a crash or power cut can lose or corrupt "
          "data): barrier=0 (measured without loss; crash points are a sample, not a proof)");
    CHECK(lines[2] ==
          "# WARNING: trades durability for speed (a crash or power cut can lose or corrupt "
          "data): cache=unsafe (not covered by the measurement)");

    // A failed fsck is not safe even without a lost commit.
    auto broken = render_apply_snippet(
        ext4(CacheMode::kNone),
        fstab_with(measured(durability_record(durability_summary(50, 0, 0, 0, 1)))));
    REQUIRE(broken.ok());
    CHECK(lines_of(broken->text)[0].rfind("# WARNING: measured: kept every acknowledged commit in "
                                          "50 crash states; 1 failed fsck",
                                          0) == 0);
}

TEST_CASE("apply: without a measurement, the labels alone", "[apply][durability]") {
    for (const auto& durability :
         {std::optional<DurabilityResult>(), std::optional<DurabilityResult>(DurabilityResult())}) {
        auto snippet =
            render_apply_snippet(ext4(CacheMode::kUnsafe, "barrier=0"), fstab_with(durability));
        REQUIRE(snippet.ok());
        CHECK(snippet->measured_risks.empty());
        CHECK(lines_of(snippet->text)[0] ==
              "# WARNING: trades durability for speed (a crash or power cut can lose or corrupt "
              "data): cache=unsafe, barrier=0");
    }
}

TEST_CASE("apply: the disk formats use runs without risky server variables, mycnf its own",
          "[apply][durability]") {
    const Workload file = ledger("ledger-file");
    const Workload trx2 = ledger("ledger-trx2", Json{{"innodb_flush_log_at_trx_commit", 2}});
    const std::vector<RunRecord> runs = {
        durability_run(file, durability_record(durability_summary(50, 0, 0, 0))),
        durability_run(trx2, durability_record(durability_summary(50, 30, 80, 20)))};

    ApplyRequest qm;
    qm.format = ApplyFormat::kQm;
    const DurabilityResult disk = applicable_durability(runs, qm);
    CHECK(disk.workloads() == std::vector<std::string>{"ledger-file"});
    CHECK(disk.safe());

    ApplyRequest mycnf;
    mycnf.format = ApplyFormat{ApplyTarget::kServerSettings, &mariadb_server_settings()};
    mycnf.workload = trx2;
    const DurabilityResult innodb = applicable_durability(runs, mycnf);
    CHECK(innodb.workloads() == std::vector<std::string>{"ledger-trx2"});
    CHECK_FALSE(innodb.safe());
    mycnf.durability = innodb;
    auto snippet = render_apply_snippet(ext4(CacheMode::kNone), mycnf);
    REQUIRE(snippet.ok());
    CHECK(snippet->measured_risks == std::vector<std::string>{"innodb_flush_log_at_trx_commit=2"});
    CHECK(lines_of(snippet->text)[0] ==
          "# WARNING: measured: lost acknowledged commits in 30 of 50 crash states (up to 80) "
          "(ledger workload 'ledger-trx2'; flush-barriers model; volatile-cache rule; "
          "docs/durability.md): innodb_flush_log_at_trx_commit=2");
}

TEST_CASE("apply: the route answers the measurement of the stored runs", "[apply][durability]") {
    test::TempDir dir;
    auto store = testing::open_store(dir.file("results.db"));
    const StorageConfig unsafe = ext4(CacheMode::kUnsafe);
    test::store_durability_sweep(
        *store,
        {{testing::planned_run(unsafe, ledger("ledger"), 0, 0),
          test::StoredOutcome{
              RunStatus::kSucceeded,
              {{"commits_per_s", 900}},
              durability_record(durability_summary(50, 7, 12, 1.1), "host-power-cut")}}},
        Json::array());
    ApplyRequest request;
    request.format = ApplyFormat::kQm;
    auto answer = apply_configuration(*store, config_id(unsafe), request);
    INFO((answer.ok() ? "" : answer.error().message));
    REQUIRE(answer.ok());
    const Json& durability = answer.value()["measured_durability"];
    CHECK(durability["verdict"] == "lost acknowledged commits in 7 of 50 crash states (up to 12)");
    CHECK(durability["safe"] == false);
    CHECK(durability["covers"] == Json::array({"cache=unsafe"}));
    CHECK(answer.value()["snippet"].get<std::string>().rfind(
              "# WARNING: measured: lost acknowledged commits in 7 of 50 crash states (up to 12)",
              0) == 0);
}

}  // namespace
}  // namespace ds
