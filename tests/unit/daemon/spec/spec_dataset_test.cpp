// The workload key `dataset` (golden volumes, issue 18 §3): "golden" only
// for a kind with a preparation step and on storages that clone, refused
// otherwise with the position; the parsed workload and its stored JSON
// carry it.
#include <catch2/catch.hpp>

#include "daemon/spec/spec.h"

namespace ds {
namespace {

Result<SweepSpec> parse(const std::string& matrix, const std::string& workload) {
    return parse_sweep_spec("name = \"t\"\n" + matrix + "[[workload]]\n" + workload, "t.toml");
}

}  // namespace

TEST_CASE("dataset: golden for fio and sysbench-oltp, fresh by default", "[spec][golden]") {
    auto fio = parse("", "kind = \"fio\"\ndataset = \"golden\"\nsize = \"16m\"\n");
    REQUIRE(fio.ok());
    CHECK(fio->workloads.front().dataset == DatasetSource::kGolden);
    CHECK(to_json(fio->workloads.front()).at("dataset") == "golden");
    auto sysbench = parse("[matrix]\nstorage = [\"file\", \"rbd:pool\", \"lvm-thin:vg/pool\"]\n",
                          "kind = \"sysbench-oltp\"\ndataset = \"golden\"\n");
    INFO((sysbench.ok() ? "" : sysbench.error().message));
    REQUIRE(sysbench.ok());
    CHECK(sysbench->workloads.front().dataset == DatasetSource::kGolden);
    auto fresh = parse("", "kind = \"fio\"\n");
    REQUIRE(fresh.ok());
    CHECK(fresh->workloads.front().dataset == DatasetSource::kFresh);
    CHECK_FALSE(to_json(fresh->workloads.front()).contains("dataset"));
    auto explicit_fresh = parse("", "kind = \"io\"\ndataset = \"fresh\"\n");
    CHECK(explicit_fresh.ok());
}

TEST_CASE("dataset: the stored workload reads back as it was written", "[spec][golden]") {
    Workload workload{"w", "fio", Json::object()};
    workload.dataset = DatasetSource::kGolden;
    auto back = workload_from_json(to_json(workload));
    REQUIRE(back.ok());
    CHECK(back->dataset == DatasetSource::kGolden);
    Json bad = to_json(workload);
    bad["dataset"] = "borrowed";
    CHECK_THAT(workload_from_json(bad).error().message,
               Catch::Contains("'dataset' is \"borrowed\", expected fresh or golden"));
}

TEST_CASE("dataset: refused with its position for kinds without a preparation", "[spec][golden]") {
    auto atis = parse("", "kind = \"mariadb-atis\"\ndataset = \"golden\"\n");
    REQUIRE_FALSE(atis.ok());
    CHECK(atis.error().message ==
          "t.toml:4:11: dataset \"golden\": workload kind 'mariadb-atis' has no preparation step "
          "to do once; kinds that have one: fio, sysbench-oltp, pgbench");
    auto io = parse("", "kind = \"io\"\ndataset = \"golden\"\n");
    REQUIRE_FALSE(io.ok());
    CHECK_THAT(io.error().message, Catch::Contains("workload kind 'io' has no preparation"));
}

TEST_CASE("dataset: refused with its position on a storage that cannot clone", "[spec][golden]") {
    auto block = parse("[matrix]\nstorage = [\"file\", \"block:/dev/loop3\"]\n",
                       "kind = \"fio\"\ndataset = \"golden\"\n");
    REQUIRE_FALSE(block.ok());
    CHECK(block.error().message ==
          "t.toml:6:11: dataset \"golden\": storage 'block:/dev/loop3' cannot clone a golden "
          "volume (storages that can: file, lvm-thin, rbd)");
}

TEST_CASE("dataset: only fresh or golden", "[spec][golden]") {
    auto word = parse("", "kind = \"fio\"\ndataset = \"cloned\"\n");
    REQUIRE_FALSE(word.ok());
    CHECK(word.error().message == "t.toml:4:11: dataset 'cloned' is not \"fresh\" or \"golden\"");
    auto number = parse("", "kind = \"fio\"\ndataset = 1\n");
    REQUIRE_FALSE(number.ok());
    CHECK_THAT(number.error().message,
               Catch::Contains("'dataset' must be \"fresh\" or \"golden\""));
}

}  // namespace ds
