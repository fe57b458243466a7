// The backend registry: storage lines, the kind table, and the check that
// refuses a sweep naming a backend this daemon does not have.
#include "daemon/backends/registry.h"

#include <catch2/catch.hpp>

#include "daemon/api/api.h"

using namespace ds;

namespace {

BackendCatalog file_only_catalog(const std::string& dir = "/tmp/disksweep-registry-test") {
    BackendCatalog catalog;
    catalog.add_hypervisor("libvirt", "test:///default");
    auto line = parse_storage_line("file");
    REQUIRE(line.ok());
    auto storage =
        make_storage_backend(line.value(), StorageContext{.default_file_directory = dir});
    REQUIRE(storage.ok());
    REQUIRE(catalog.add_storage(std::move(storage).value()).ok());
    return catalog;
}

// A storage of any name and disk kind, for pairing checks.
class NamedStorage : public StorageBackend {
  public:
    NamedStorage(std::string name, DiskSourceKind kind) : name_(std::move(name)), kind_(kind) {}
    std::string name() const override { return name_; }
    DiskSourceKind produces() const override { return kind_; }
    Result<Volume> create_volume(const std::string&, const StorageConfig&) override {
        return make_error(errc::kStorage, "not in this test");
    }
    Status remove_volume(const std::string&) override { return ok_status(); }
    Result<std::vector<std::string>> list_volumes(const std::string&) override {
        return std::vector<std::string>{};
    }

  private:
    std::string name_;
    DiskSourceKind kind_;
};

}  // namespace

TEST_CASE("storage lines split into kind, pool and options", "[registry]") {
    auto line = parse_storage_line(" rbd:fast,mon_host=127.0.0.1:6789, id=disksweep ");
    REQUIRE(line.ok());
    CHECK(line->kind == "rbd");
    CHECK(line->pool == "fast");
    CHECK(line->name() == "rbd:fast");
    CHECK(line->options.at("mon_host") == "127.0.0.1:6789");
    CHECK(line->options.at("id") == "disksweep");

    auto twice = parse_storage_line("rbd:p,id=a,id=b");
    REQUIRE_FALSE(twice.ok());
    CHECK_THAT(twice.error().message, Catch::Contains("'id' given twice"));
    auto no_value = parse_storage_line("rbd:p,keyring");
    REQUIRE_FALSE(no_value.ok());
    CHECK_THAT(no_value.error().message, Catch::Contains("'keyring' is not KEY=VALUE"));
    CHECK_FALSE(parse_storage_line("rbd:").ok());
    CHECK_FALSE(parse_storage_line(",id=x").ok());
    auto trailing = parse_storage_line("rbd:p,");
    REQUIRE_FALSE(trailing.ok());
    CHECK_THAT(trailing.error().message, Catch::Contains("option number 1 is not KEY=VALUE"));
}

TEST_CASE("a storage line's errors never echo what may be a secret", "[registry]") {
    const std::string key = "AQBxvUtlAAAAABAAkD1Zx4Cr1zvVTmJC4wyU3w==";
    for (const std::string& text :
         {"rbd:p," + key, "rbd:p,id=a," + key + "x", "rbd:" + key + ","}) {
        auto parsed = parse_storage_line(text);
        INFO(text);
        REQUIRE_FALSE(parsed.ok());
        CHECK_THAT(parsed.error().message, !Catch::Contains(key.substr(0, 12)));
    }
    // Pasted as an option's value, it reaches the rbd backend, which refuses
    // it without echoing (rbd_storage_unit_test.cpp).
}

TEST_CASE("an unknown storage kind or option is refused with what is valid", "[registry]") {
    StorageContext context{.default_file_directory = "/tmp/x"};
    auto unknown = make_storage_backend(parse_storage_line("nfs:share").value(), context);
    REQUIRE_FALSE(unknown.ok());
    CHECK_THAT(unknown.error().message, Catch::Contains("unknown storage kind 'nfs'"));
    CHECK_THAT(unknown.error().message, Catch::Contains("file"));

    auto bad_option = make_storage_backend(parse_storage_line("file,size=3").value(), context);
    REQUIRE_FALSE(bad_option.ok());
    CHECK_THAT(bad_option.error().message, Catch::Contains("unknown option 'size'; valid: dir"));

    auto pool = make_storage_backend(parse_storage_line("file:somewhere").value(), context);
    REQUIRE_FALSE(pool.ok());
    CHECK_THAT(pool.error().message, Catch::Contains("takes no pool"));
}

TEST_CASE("a block storage names a device under /dev/ and makes block disks", "[registry]") {
    StorageContext context;
    auto made = make_storage_backend(parse_storage_line("block:/dev/sdb").value(), context);
    REQUIRE(made.ok());
    CHECK((*made)->name() == "block:/dev/sdb");
    CHECK((*made)->produces() == DiskSourceKind::kBlock);

    auto no_device = make_storage_backend(parse_storage_line("block").value(), context);
    REQUIRE_FALSE(no_device.ok());
    CHECK_THAT(no_device.error().message, Catch::Contains("block needs a pool: block:DEVICE"));
    auto not_dev = make_storage_backend(parse_storage_line("block:sdb").value(), context);
    REQUIRE_FALSE(not_dev.ok());
    CHECK(not_dev.error().message == "storage 'block:sdb': the device must be a path under /dev/");
}

TEST_CASE("a configuration on an unconfigured storage is refused, naming what is there",
          "[registry]") {
    BackendCatalog catalog = file_only_catalog();
    StorageConfig on_file;
    CHECK(catalog.check(on_file).ok());
    REQUIRE(catalog.storage_for(on_file).ok());
    CHECK(catalog.storage_for(on_file).value()->name() == "file");

    StorageConfig on_rbd;
    on_rbd.storage = "rbd";
    on_rbd.storage_pool = "mypool";
    Status refused = catalog.check(on_rbd);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::kNotConfigured);
    CHECK_THAT(refused.error().message, Catch::Contains("storage 'rbd:mypool' is not configured"));
    CHECK_THAT(refused.error().message, Catch::Contains("configured storages: file"));

    StorageConfig on_proxmox;
    on_proxmox.hypervisor = "proxmox";
    Status no_hypervisor = catalog.check(on_proxmox);
    REQUIRE_FALSE(no_hypervisor.ok());
    CHECK_THAT(no_hypervisor.error().message,
               Catch::Contains("hypervisor 'proxmox' is not configured"));
    CHECK_THAT(no_hypervisor.error().message, Catch::Contains("configured hypervisors: libvirt"));
}

TEST_CASE("a storage whose disks the hypervisor cannot attach is refused", "[registry]") {
    BackendCatalog catalog = file_only_catalog();
    REQUIRE(catalog
                .add_storage(std::make_unique<NamedStorage>("pve:local-lvm",
                                                            DiskSourceKind::kHypervisorAllocated))
                .ok());
    StorageConfig config;
    config.storage = "pve";
    config.storage_pool = "local-lvm";
    Status refused = catalog.check(config);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message,
               Catch::Contains("cannot attach the hypervisor-allocated disks"));
    CHECK_THAT(refused.error().message, Catch::Contains("it attaches: file, block, rbd"));
    CHECK_FALSE(
        catalog.add_storage(std::make_unique<NamedStorage>("file", DiskSourceKind::kFile)).ok());
}

TEST_CASE("a sweep naming an unconfigured storage is refused at submission", "[registry]") {
    const char* spec = R"(name = "rbd-sweep"
repetitions = 1
[matrix]
storage = ["file", "rbd:mypool"]
filesystem = ["ext4"]
[[workload]]
kind = "fio"
rw = "randread"
bs = "4k"
size = "16m"
runtime = "1s"
)";
    auto submission = plan_submission(spec, "rbd-sweep.toml", SweepTimeouts{60, 900});
    REQUIRE(submission.ok());
    BackendCatalog catalog = file_only_catalog();
    Status refused = check_backends(submission.value(), catalog);
    REQUIRE_FALSE(refused.ok());
    CHECK(http_status_for(refused.error()) == 400);
    CHECK_THAT(refused.error().message, Catch::Contains("cannot run sweep 'rbd-sweep'"));
    CHECK_THAT(refused.error().message, Catch::Contains("storage 'rbd:mypool' is not configured"));

    BackendCatalog with_rbd = file_only_catalog();
    REQUIRE(with_rbd.add_storage(std::make_unique<NamedStorage>("rbd:mypool", DiskSourceKind::kRbd))
                .ok());
    CHECK(check_backends(submission.value(), with_rbd).ok());
}

TEST_CASE("the catalog lists what is configured for /v1/status", "[registry]") {
    Json json = file_only_catalog().to_json();
    REQUIRE(json["hypervisors"].size() == 1);
    CHECK(json["hypervisors"][0]["name"] == "libvirt");
    CHECK(json["hypervisors"][0]["attaches"] == Json::array({"file", "block", "rbd"}));
    REQUIRE(json["storages"].size() == 1);
    CHECK(json["storages"][0] == Json{{"name", "file"}, {"produces", "file"}});
}

TEST_CASE("lvm-thin storages are named VG/POOL and produce block disks", "[registry]") {
    StorageContext context{"/tmp/x", std::make_shared<RealProcessRunner>()};
    auto no_pool = make_storage_backend(parse_storage_line("lvm-thin").value(), context);
    REQUIRE_FALSE(no_pool.ok());
    CHECK_THAT(no_pool.error().message, Catch::Contains("needs a pool: lvm-thin:VG/POOL"));
    auto bad_name = make_storage_backend(parse_storage_line("lvm-thin:vg0").value(), context);
    REQUIRE_FALSE(bad_name.ok());
    auto storage = make_storage_backend(parse_storage_line("lvm-thin:vg0/pool0").value(), context);
    REQUIRE(storage.ok());
    CHECK((*storage)->name() == "lvm-thin:vg0/pool0");
    CHECK((*storage)->produces() == DiskSourceKind::kBlock);
}

TEST_CASE("rbd storages take their options from the backend's table", "[registry]") {
    StorageContext context{"/tmp/x", std::make_shared<RealProcessRunner>()};
    auto unknown = make_storage_backend(parse_storage_line("rbd:fast,colour=red").value(), context);
    REQUIRE_FALSE(unknown.ok());
    CHECK_THAT(unknown.error().message, Catch::Contains("unknown option 'colour'"));
    auto storage = make_storage_backend(
        parse_storage_line("rbd:fast,mon_host=127.0.0.1:6789,id=disksweep").value(), context);
    REQUIRE(storage.ok());
    CHECK((*storage)->name() == "rbd:fast");
    CHECK((*storage)->produces() == DiskSourceKind::kRbd);
}
