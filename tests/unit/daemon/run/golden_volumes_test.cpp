// Golden volumes (spec `dataset = "golden"`): the cache prepares one per
// sweep and key however many runs ask at once, hands a failed preparation's
// reason to every run that needs it, prepares again after a cancelled one
// and removes what it made when the sweep ends; the run executor prepares it
// in a guest of its own (job dataset "prepare"), clones it per run (job
// dataset "prepared") and records both in applied_settings.dataset; the
// compare reply's savings add up.
#include "daemon/run/golden_volumes.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/fakes/daemon_fakes.h"

namespace ds {
namespace {

using namespace ds::testing;
using Catch::Matchers::Contains;

// Holds a preparation, once it began, until the test releases it: a run
// that asks meanwhile is sure to find the preparation under way, and its
// answer to have come before the preparation's. A release that never comes
// ends the hold after kHangLimit, so a run that waits for the preparation
// fails the test instead of hanging it.
class PreparationHold {
  public:
    static constexpr auto kHangLimit = std::chrono::seconds(10);

    // In the preparation: says it began, then holds.
    void hold() {
        std::unique_lock lock(mutex_);
        began_ = true;
        changed_.notify_all();
        changed_.wait_for(lock, kHangLimit, [this] { return released_; });
    }
    // False when no preparation began within kHangLimit.
    bool wait_until_began() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, kHangLimit, [this] { return began_; });
    }
    void release() {
        std::lock_guard lock(mutex_);
        released_ = true;
        changed_.notify_all();
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    bool began_ = false;     // guarded by mutex_
    bool released_ = false;  // guarded by mutex_
};

struct CountingPreparation {
    std::atomic<int> calls{0};
    std::atomic<int> finished{0};
    std::chrono::milliseconds takes{200};
    PreparationHold* hold = nullptr;  // set: holds instead of taking `takes`
    FakeStorage* storage = nullptr;
    std::optional<Error> fails;

    GoldenVolumes::Prepare function() {
        return [this](const std::string&, const std::string& volume) -> Result<GoldenVolume> {
            ++calls;
            if (hold) {
                hold->hold();
            } else {
                std::this_thread::sleep_for(takes);
            }
            ++finished;
            if (fails) return *fails;
            GoldenVolume golden;
            golden.name = volume;
            golden.storage = storage;
            golden.prepare_s = 3;
            golden.preparation_s = 20;
            if (storage) (void)storage->create_volume(volume, StorageConfig{});
            return golden;
        };
    }
};

// `count` acquisitions of one key at once, on threads of their own.
std::vector<Result<GoldenVolume>> acquire_at_once(GoldenVolumes& goldens,
                                                  CountingPreparation& preparation, int count) {
    std::vector<std::optional<Result<GoldenVolume>>> outcomes(static_cast<std::size_t>(count));
    const std::atomic<bool> never{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < count; ++i) {
        threads.emplace_back([&, i] {
            outcomes[static_cast<std::size_t>(i)] =
                goldens.acquire(7, "key", i + 1, preparation.function(), never);
        });
    }
    for (auto& thread : threads) thread.join();
    std::vector<Result<GoldenVolume>> results;
    for (auto& outcome : outcomes) results.push_back(std::move(*outcome));
    return results;
}

}  // namespace

TEST_CASE("golden cache: one preparation for concurrent runs, the others wait for it", "[golden]") {
    GoldenVolumes goldens(names_of("gc1"));
    FakeStorage storage;
    CountingPreparation preparation;
    preparation.storage = &storage;
    const auto results = acquire_at_once(goldens, preparation, 4);
    CHECK(preparation.calls == 1);
    int prepared_by = 0;
    for (const auto& result : results) {
        REQUIRE(result.ok());
        CHECK(result->name == "disksweep-gc1-g7-0-golden");
        prepared_by = result->prepared_by_run;
    }
    CHECK(prepared_by >= 1);
    // Another key of the same sweep is another golden; the first is reused.
    const std::atomic<bool> never{false};
    auto other = goldens.acquire(7, "other key", 9, preparation.function(), never);
    REQUIRE(other.ok());
    CHECK(other->name == "disksweep-gc1-g7-1-golden");
    CHECK(goldens.acquire(7, "key", 10, preparation.function(), never)->name ==
          "disksweep-gc1-g7-0-golden");
    CHECK(preparation.calls == 2);

    // The sweep's end removes both; nothing is left to remove after that.
    CHECK(goldens.release_sweep(7).empty());
    CHECK(storage.live_volumes().empty());
    CHECK(storage.removed().size() == 2);
    CHECK(goldens.release_sweep(7).empty());
    CHECK(storage.removed().size() == 2);
}

TEST_CASE("golden cache: a failed preparation fails every run that needs it, once", "[golden]") {
    GoldenVolumes goldens(names_of("gc1"));
    CountingPreparation preparation;
    preparation.fails = make_error(errc::kStorage, "pool is full");
    for (const auto& result : acquire_at_once(goldens, preparation, 3)) {
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == errc::kStorage);
        CHECK_THAT(result.error().message, Contains("pool is full"));
    }
    // Not tried again within the sweep: the reason stands.
    const std::atomic<bool> never{false};
    CHECK_FALSE(goldens.acquire(7, "key", 5, preparation.function(), never).ok());
    CHECK(preparation.calls == 1);
    CHECK(goldens.release_sweep(7).empty());
}

TEST_CASE("golden cache: a cancelled preparation is prepared again by the next run", "[golden]") {
    GoldenVolumes goldens(names_of("gc1"));
    CountingPreparation preparation;
    preparation.takes = std::chrono::milliseconds(0);
    preparation.fails = make_error(errc::kCancelled, "cancelled");
    const std::atomic<bool> never{false};
    CHECK(goldens.acquire(7, "key", 1, preparation.function(), never).error().code ==
          errc::kCancelled);
    preparation.fails.reset();
    CHECK(goldens.acquire(7, "key", 2, preparation.function(), never).ok());
    CHECK(preparation.calls == 2);
}

TEST_CASE("golden cache: a waiting run that is cancelled stops waiting", "[golden]") {
    GoldenVolumes goldens(names_of("gc1"));
    PreparationHold hold;
    CountingPreparation preparation;
    preparation.hold = &hold;
    const std::atomic<bool> never{false};
    std::thread first([&] { (void)goldens.acquire(7, "key", 1, preparation.function(), never); });
    REQUIRE(hold.wait_until_began());
    const std::atomic<bool> cancelled{true};
    auto waited = goldens.acquire(7, "key", 2, preparation.function(), cancelled);
    // Answered while the preparation still held: it did not wait for it.
    CHECK(preparation.finished == 0);
    hold.release();
    first.join();
    REQUIRE_FALSE(waited.ok());
    CHECK(waited.error().code == errc::kCancelled);
    CHECK(preparation.calls == 1);
}

TEST_CASE("golden key: what the prepared data depends on, nothing else", "[golden]") {
    StorageConfig config;
    config.filesystem = {"ext4", "ext4", {}, "", {}};
    Workload sysbench{"oltp", "sysbench-oltp", {{"tables", 2}, {"time", "10s"}, {"threads", 1}}};
    const std::string key = golden_key("file", config, sysbench);
    // Run-only params and settings of the disk's attachment do not count.
    Workload longer = sysbench;
    longer.params["time"] = "60s";
    longer.params["threads"] = 8;
    StorageConfig attached = config;
    attached.discard = !config.discard;
    attached.cache = CacheMode::kUnsafe;
    CHECK(golden_key("file", attached, longer) == key);
    // The data's shape, the file system and the storage do.
    Workload bigger = sysbench;
    bigger.params["tables"] = 4;
    CHECK(golden_key("file", config, bigger) != key);
    StorageConfig xfs = config;
    xfs.filesystem.type = "xfs";
    CHECK(golden_key("file", xfs, sysbench) != key);
    StorageConfig mounted = config;
    mounted.filesystem.mount_options = "nobarrier";
    CHECK(golden_key("file", mounted, sysbench) != key);
    StorageConfig larger = config;
    larger.disk_size_bytes *= 2;
    CHECK(golden_key("file", larger, sysbench) != key);
    CHECK(golden_key("rbd:pool", config, sysbench) != key);
    // fio names its files after the workload, and every option may shape them.
    Workload fio{"write", "fio", {{"size", "16m"}}};
    Workload renamed = fio;
    renamed.name = "write2";
    CHECK(golden_key("file", config, fio) != golden_key("file", config, renamed));
}

TEST_CASE("golden savings: avoided preparations minus the goldens' cost and the clones",
          "[golden]") {
    const Json first = {{"source", "golden"},
                        {"golden_volume", "g0"},
                        {"prepare_s", 10.0},
                        {"preparation_s", 30.0},
                        {"clone_s", 0.5}};
    Json second = first;
    second["clone_s"] = 1.5;
    const Json other = {{"source", "golden"},
                        {"golden_volume", "g1"},
                        {"prepare_s", 4.0},
                        {"preparation_s", 25.0},
                        {"clone_s", 1.0}};
    const Json fresh = {{"source", "fresh"}};
    const Json savings = golden_savings({first, second, second, other, fresh, Json()});
    CHECK(savings.at("runs") == 4);
    CHECK(savings.at("golden_volumes") == 2);
    CHECK(savings.at("avoided_s").get<double>() == Approx(34.0));
    CHECK(savings.at("preparation_s").get<double>() == Approx(55.0));
    CHECK(savings.at("clone_s").get<double>() == Approx(4.5));
    CHECK(savings.at("saved_s").get<double>() == Approx(34.0 - 55.0 - 4.5));
    CHECK(golden_savings({fresh}).is_null());
}

namespace {

Workload golden_fio_workload() {
    Workload workload = fio_workload();
    workload.dataset = DatasetSource::kGolden;
    return workload;
}

// A sweep of `count` runs of the golden fio workload; its runs as stored.
std::vector<RunRecord> golden_sweep(ExecutorFixture& fixture, int count) {
    SweepRecord sweep;
    sweep.name = "golden";
    sweep.spec_toml = "name = \"golden\"\n";
    sweep.spec_source = "test";
    sweep.created_at = utc_now_iso8601();
    std::vector<RunRecord> planned;
    for (int i = 0; i < count; ++i) {
        planned.push_back(planned_run(reference_config(), golden_fio_workload(), i, i));
    }
    auto id = fixture.store->create_sweep(sweep, planned);
    REQUIRE(id.ok());
    auto runs = fixture.store->list_runs(id.value());
    REQUIRE(runs.ok());
    return runs.value();
}

std::vector<RunRecord> execute_at_once(ExecutorFixture& fixture,
                                       const std::vector<RunRecord>& runs) {
    std::vector<RunRecord> finished(runs.size());
    RunExecutor executor(fixture.environment());
    std::vector<std::thread> threads;
    const std::atomic<bool> never{false};
    for (std::size_t i = 0; i < runs.size(); ++i) {
        threads.emplace_back([&, i] { finished[i] = executor.execute(runs[i], 5, 10, never); });
    }
    for (auto& thread : threads) thread.join();
    return finished;
}

// `count` golden runs at once: each fails with the preparation's reason
// (`reason`), and nothing is left.
void check_preparation_failed(ExecutorFixture& fixture, int count, const std::string& reason) {
    for (const RunRecord& run : execute_at_once(fixture, golden_sweep(fixture, count))) {
        CHECK(run.status == RunStatus::kFailed);
        CHECK_THAT(run.failure_reason, Contains("preparing the golden volume"));
        CHECK_THAT(run.failure_reason, Contains(reason));
    }
    CHECK(fixture.storage.cloned().empty());
    CHECK(fixture.storage.live_volumes().empty());
    CHECK(fixture.hypervisor.live_vms().empty());
}

std::string job_dataset(const std::vector<Json>& received) {
    for (const Json& message : received) {
        if (message.value("type", "") == "job") return message.value("dataset", "fresh");
    }
    return "no job";
}

}  // namespace

TEST_CASE("golden runs: one guest prepares, every run clones and skips the preparation",
          "[golden][executor]") {
    ExecutorFixture fixture;
    GoldenVolumes goldens(fixture.names);
    fixture.goldens = &goldens;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const auto runs = golden_sweep(fixture, 3);
    const auto finished = execute_at_once(fixture, runs);

    const std::string golden_vm = fixture.names.golden_vm(runs[0].sweep_id, 0);
    const std::string golden = fixture.names.golden_volume(runs[0].sweep_id, 0);
    // One preparation: one guest, one volume made, sealed once.
    CHECK(fixture.hypervisor.started().size() == 4);
    CHECK(fixture.hypervisor.destroy_count(golden_vm) == 1);
    CHECK(job_dataset(fixture.hypervisor.guest_received(golden_vm)) == "prepare");
    CHECK(fixture.storage.created() == std::vector<std::string>{golden});
    CHECK(fixture.storage.sealed() == std::vector<std::string>{golden});
    int prepared_by_a_run = 0;
    for (const RunRecord& run : finished) {
        INFO(run.failure_reason);
        REQUIRE(run.status == RunStatus::kSucceeded);
        CHECK(job_dataset(fixture.hypervisor.guest_received(run.vm_name)) == "prepared");
        const RunRecord stored = fixture.stored(run.id);
        const Json& dataset = stored.applied_settings.at("dataset");
        CHECK(dataset.at("source") == "golden");
        CHECK(dataset.at("golden_volume") == golden);
        // The guest's format_s + post_format_s + prepare_s.
        CHECK(dataset.at("prepare_s").get<double>() == Approx(4.25));
        CHECK(dataset.at("preparation_s").get<double>() > 0);
        CHECK(dataset.at("clone_method") == "fake-clone");
        CHECK(dataset.at("clone_s").get<double>() >= 0);
        prepared_by_a_run += dataset.at("prepared_by_this_run").get<bool>() ? 1 : 0;
    }
    CHECK(prepared_by_a_run == 1);
    CHECK(fixture.storage.cloned().size() == 3);
    // Every run's clone is gone; the golden stays until the sweep ends.
    CHECK(fixture.storage.live_volumes() == std::vector<std::string>{golden});
    CHECK(goldens.release_sweep(runs[0].sweep_id).empty());
    CHECK(fixture.storage.live_volumes().empty());
    CHECK(fixture.hypervisor.live_vms().empty());
}

TEST_CASE("golden runs: a failed preparation fails each run with its reason, leaving nothing",
          "[golden][executor]") {
    ExecutorFixture fixture;
    GoldenVolumes goldens(fixture.names);
    fixture.goldens = &goldens;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    fixture.storage.fail_create("thin pool is full");
    check_preparation_failed(fixture, 2, "thin pool is full");
}

TEST_CASE("golden runs: a guest that fails the preparation fails the runs, the golden removed",
          "[golden][executor]") {
    ExecutorFixture fixture;
    GoldenVolumes goldens(fixture.names);
    fixture.goldens = &goldens;
    GuestBehaviour behaviour;
    // A preparation's result the daemon refuses (a timing that is no number).
    behaviour.result_patch = Json{{"timings", {{"prepare_s", "not a number"}}}};
    fixture.hypervisor.set_guest_script(well_behaved_guest(behaviour));
    check_preparation_failed(fixture, 1, "prepare_s");
    CHECK(fixture.storage.sealed().empty());
}

TEST_CASE("golden runs: without a golden cache a golden workload fails, saying why",
          "[golden][executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run =
        fixture.execute(fixture.pending_run(reference_config(), golden_fio_workload()));
    CHECK(run.status == RunStatus::kFailed);
    CHECK_THAT(run.failure_reason, Contains("keeps no golden volumes"));
}

TEST_CASE("fresh runs record their dataset source", "[golden][executor]") {
    ExecutorFixture fixture;
    fixture.hypervisor.set_guest_script(well_behaved_guest());
    const RunRecord run = fixture.execute(fixture.pending_run());
    REQUIRE(run.status == RunStatus::kSucceeded);
    CHECK(fixture.stored(run.id).applied_settings.at("dataset") == Json{{"source", "fresh"}});
}

}  // namespace ds
