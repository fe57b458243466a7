// The remote test host itself (tests/remote/remote-libvirtd.sh, fixture
// remote/libvirtd_up): what issue 20's end-to-end test relies on, checked
// through libvirt's C API alone, as disksweepd will use it. Its pool is
// reachable over qemu+tcp, its files are not reachable as files, volumes
// move through streams, and `kill` then `start` crash and restore libvirtd
// with its pool's volumes intact.
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/remote_libvirtd.h"

using ds::test::TestRemoteLibvirtd;

namespace {

struct ConnectionClose {
    void operator()(virConnectPtr connection) const { virConnectClose(connection); }
};
struct PoolFree {
    void operator()(virStoragePoolPtr pool) const { virStoragePoolFree(pool); }
};
struct VolumeFree {
    void operator()(virStorageVolPtr volume) const { virStorageVolFree(volume); }
};
struct StreamFree {
    void operator()(virStreamPtr stream) const { virStreamFree(stream); }
};
using Connection = std::unique_ptr<virConnect, ConnectionClose>;
using Pool = std::unique_ptr<virStoragePool, PoolFree>;
using Volume = std::unique_ptr<virStorageVol, VolumeFree>;
using Stream = std::unique_ptr<virStream, StreamFree>;

// libvirt hands out malloc'd strings.
std::string take_string(char* text) {
    std::string result = text ? text : "";
    free(text);  // NOLINT(cppcoreguidelines-no-malloc): libvirt's allocation
    return result;
}

Connection connect(const TestRemoteLibvirtd& host) {
    Connection connection(virConnectOpen(host.uri.c_str()));
    INFO("virConnectOpen(" << host.uri << "): " << virGetLastErrorMessage() << " (log " << host.log
                           << ")");
    REQUIRE(connection != nullptr);
    return connection;
}

Pool pool_of(virConnectPtr connection, const TestRemoteLibvirtd& host) {
    Pool pool(virStoragePoolLookupByName(connection, host.pool.c_str()));
    INFO("pool " << host.pool << ": " << virGetLastErrorMessage());
    REQUIRE(pool != nullptr);
    return pool;
}

// The text between <tag> and </tag>, or "".
std::string element_text(const std::string& xml, const std::string& tag) {
    const auto open = xml.find("<" + tag + ">");
    const auto close = xml.find("</" + tag + ">");
    if (open == std::string::npos || close == std::string::npos) return "";
    const auto begin = open + tag.size() + 2;
    return close > begin ? xml.substr(begin, close - begin) : "";
}

Volume create_volume(virStoragePoolPtr pool, const std::string& name, std::size_t bytes) {
    const std::string xml = "<volume><name>" + name + "</name><capacity unit='bytes'>" +
                            std::to_string(bytes) +
                            "</capacity><target><format type='raw'/></target></volume>";
    Volume volume(virStorageVolCreateXML(pool, xml.c_str(), 0));
    INFO("creating volume " << name << ": " << virGetLastErrorMessage());
    REQUIRE(volume != nullptr);
    return volume;
}

void upload(virConnectPtr connection, virStorageVolPtr volume, const std::string& bytes) {
    Stream stream(virStreamNew(connection, 0));
    REQUIRE(stream != nullptr);
    INFO("uploading: " << virGetLastErrorMessage());
    REQUIRE(virStorageVolUpload(volume, stream.get(), 0, bytes.size(), 0) == 0);
    for (std::size_t sent = 0; sent < bytes.size();) {
        const int count = virStreamSend(stream.get(), bytes.data() + sent, bytes.size() - sent);
        REQUIRE(count > 0);
        sent += static_cast<std::size_t>(count);
    }
    REQUIRE(virStreamFinish(stream.get()) == 0);
}

std::string download(virConnectPtr connection, virStorageVolPtr volume, std::size_t length) {
    Stream stream(virStreamNew(connection, 0));
    REQUIRE(stream != nullptr);
    INFO("downloading: " << virGetLastErrorMessage());
    REQUIRE(virStorageVolDownload(volume, stream.get(), 0, length, 0) == 0);
    std::string bytes;
    std::vector<char> buffer(64 * 1024);
    for (;;) {
        const int count = virStreamRecv(stream.get(), buffer.data(), buffer.size());
        REQUIRE(count >= 0);
        if (count == 0) break;
        bytes.append(buffer.data(), static_cast<std::size_t>(count));
    }
    REQUIRE(virStreamFinish(stream.get()) == 0);
    return bytes;
}

// The names of the pool's volumes, after a refresh (a dir pool lists what
// is in its directory).
std::set<std::string> volume_names(virStoragePoolPtr pool) {
    INFO("listing volumes: " << virGetLastErrorMessage());
    REQUIRE(virStoragePoolRefresh(pool, 0) == 0);
    virStorageVolPtr* volumes = nullptr;
    const int count = virStoragePoolListAllVolumes(pool, &volumes, 0);
    REQUIRE(count >= 0);
    std::set<std::string> names;
    for (int i = 0; i < count; ++i) {
        names.insert(virStorageVolGetName(volumes[i]));
        virStorageVolFree(volumes[i]);
    }
    free(volumes);  // NOLINT(cppcoreguidelines-no-malloc): libvirt's allocation
    return names;
}

// Whether a file named `name` is anywhere below `dir`.
bool file_named_below(const std::filesystem::path& dir, const std::string& name) {
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
         !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
        if (it->path().filename() == name) return true;
    }
    return false;
}

void run_harness(const std::string& subcommand, const TestRemoteLibvirtd& host) {
    const auto output = ds::test::run_remote_libvirtd(subcommand, host);
    INFO("remote-libvirtd.sh " << subcommand << ": "
                               << (output ? output->stderr_text : output.error().message));
    REQUIRE(output);
    REQUIRE(output->exit_code == 0);
}

// Brings libvirtd back if the test stops between `kill` and `start`, so that
// the fixture's later tests find it up.
class RestartIfKilled {
  public:
    explicit RestartIfKilled(const TestRemoteLibvirtd& host) : host_(host) {}
    ~RestartIfKilled() {
        if (!restarted_) (void)ds::test::run_remote_libvirtd("start", host_);
    }
    RestartIfKilled(const RestartIfKilled&) = delete;
    RestartIfKilled& operator=(const RestartIfKilled&) = delete;
    void restarted() { restarted_ = true; }

  private:
    const TestRemoteLibvirtd& host_;
    bool restarted_ = false;
};

}  // namespace

// About 1 s here (0.7 to 0.95 s; the fixture's up and down 2 s more).
TEST_CASE("harness") {
    const TestRemoteLibvirtd host = ds::test::test_remote_libvirtd_or_skip();
    virSetErrorFunc(nullptr, [](void*, virErrorPtr) {});
    Connection connection = connect(host);
    Pool pool = pool_of(connection.get(), host);

    // The pool: an active dir pool, its directory not reachable as a file.
    REQUIRE(virStoragePoolIsActive(pool.get()) == 1);
    const std::string pool_xml = take_string(virStoragePoolGetXMLDesc(pool.get(), 0));
    INFO(pool_xml);
    REQUIRE(pool_xml.rfind("<pool type='dir'>", 0) == 0);
    const std::string target = element_text(pool_xml, "path");
    REQUIRE(!target.empty());

    // A volume through streams only; its file is neither at the path libvirt
    // names nor in the harness's DIR.
    const std::string name = "harness-smoke.raw";
    Volume volume = create_volume(pool.get(), name, 1024 * 1024);
    const std::string volume_path = take_string(virStorageVolGetPath(volume.get()));
    CHECK(volume_path == target + "/" + name);
    CHECK_FALSE(std::filesystem::exists(volume_path));
    CHECK_FALSE(file_named_below(host.dir, name));
    std::string bytes(200 * 1024, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / 251);
    upload(connection.get(), volume.get(), bytes);
    CHECK(download(connection.get(), volume.get(), bytes.size()) == bytes);
    REQUIRE(virStorageVolDelete(volume.get(), 0) == 0);
    CHECK(volume_names(pool.get()).count(name) == 0);

    // kill: the connection breaks; start: a new one finds the pool's
    // volumes as they were.
    Volume kept = create_volume(pool.get(), "harness-kept.raw", 1024 * 1024);
    const auto before = volume_names(pool.get());
    REQUIRE(before.count("harness-kept.raw") == 1);
    {
        RestartIfKilled guard(host);
        run_harness("kill", host);
        CHECK(virConnectNumOfStoragePools(connection.get()) == -1);
        CHECK(virConnectIsAlive(connection.get()) == 0);
        CHECK(virConnectOpen(host.uri.c_str()) == nullptr);
        run_harness("start", host);
        guard.restarted();
    }
    kept.reset();
    pool.reset();
    connection = connect(host);
    pool = pool_of(connection.get(), host);
    REQUIRE(virStoragePoolIsActive(pool.get()) == 1);
    CHECK(volume_names(pool.get()) == before);
    Volume cleanup(virStorageVolLookupByName(pool.get(), "harness-kept.raw"));
    REQUIRE(cleanup != nullptr);
    REQUIRE(virStorageVolDelete(cleanup.get(), 0) == 0);
}
