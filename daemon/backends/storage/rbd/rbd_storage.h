// The Ceph RBD storage backend (`rbd:POOL`): one RBD image per run in one
// pool, deleted after the run; QEMU reaches it with its own rbd driver
// (an RbdDisk names the pool, image, monitors, cephx user and the paths of
// the keyring and ceph.conf, never the key).
//
// Why Ceph's command-line tools (`rbd`, `ceph`, package ceph-common) through
// the ProcessRunner, with argument vectors, and not librbd/librados:
//  * disksweepd forks helpers all the time; a librados cluster handle runs a
//    dozen threads and process-wide Ceph state (a context, its config, its
//    logging) inside the daemon. The tools keep all of that in a child.
//  * A sick cluster cannot hang the daemon: each call has Ceph's own
//    connect/op timeouts and a process the runner kills as a last resort,
//    where a blocked librados call would pin a daemon thread.
//  * Fakeable: the unit tests script the tools' outputs through a fake
//    runner, like every other external tool in disksweep.
//  * What is parsed is JSON (`--format json` on ls, du, status, health), and
//    `rbd` exits with the errno of its failure (ENOENT, EBUSY, EEXIST), so
//    errors are classified without parsing prose; the prose on stderr is
//    Ceph's own message, passed on in errors.
// Cost: a process per call (about 0.15 s for rbd, 1 s for the Python
// `ceph`), a few calls per run.
//
// Secrets: the cephx key never enters disksweep. Commands name the keyring
// file; anything that looks like a cephx key in Ceph's output is redacted
// before it reaches an error or a log.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/process.h"
#include "common/result.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

struct RbdStorageOptions {
    std::string pool;
    std::vector<std::string> monitors;  // "IP:PORT" each; empty = those of ceph_conf
    std::string user;                   // cephx id without "client."; "" = Ceph's default
    std::string keyring;                // absolute path; "" = the one ceph_conf names
    std::string ceph_conf;              // absolute path; "" = Ceph's default config
};

// The option keys of an `rbd:POOL,KEY=VALUE,...` line, with their meaning.
struct RbdOptionKey {
    std::string_view key;
    std::string_view help;
};
std::span<const RbdOptionKey> rbd_option_keys();

// From a storage line (the daemon config's
//   rbd:POOL,mon_host=127.0.0.1:6789,id=disksweep,keyring=/path,conf=/path
// as split by the registry's parse_storage_line) its pool and KEY=VALUE
// options. Several monitors: mon_host=IP:PORT;IP:PORT; every option is
// optional. Checks the pool name and every value; errors name the key (never
// a value, which might be a secret pasted into the wrong place).
Result<RbdStorageOptions> rbd_storage_options(std::string_view pool,
                                              const std::map<std::string, std::string>& options);

class RbdStorage : public StorageBackend {
  public:
    // `runner` (not null) runs Ceph's tools; shared with the daemon's others.
    RbdStorage(RbdStorageOptions options, std::shared_ptr<ProcessRunner> runner);

    std::string name() const override { return "rbd:" + options_.pool; }
    DiskSourceKind produces() const override { return DiskSourceKind::kRbd; }
    // `rbd create` of config.disk_size_bytes. Refuses qcow2: an RBD image has
    // no format for QEMU to choose, it is always raw.
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    // `rbd rm`. An image already gone is success; an image still open (a
    // guest's QEMU holds it: watchers) is an error naming the watchers.
    Status remove_volume(const std::string& name) override;
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;
    // {"health": "HEALTH_OK", "health_checks": [...], "volume_used_bytes": N,
    //  "volume_provisioned_bytes": N}; the volume's keys are absent when it is
    // gone, and what could not be read is in "errors" (Ceph's messages).
    Json state(const std::string& volume) override;
    // `rbd du`'s used_size of the image (Ceph's count of the image's written
    // extents). errc::kNotFound when the image is gone.
    Result<std::uint64_t> allocated_bytes(const std::string& volume) override;

    // Golden volumes: the snapshot kGoldenSnapshot of the golden image,
    // protected (`rbd snap create`, `rbd snap protect`); each run's volume is
    // an `rbd clone` of it (method "rbd-clone"), which depends on it until
    // removed. remove_golden: `rbd snap unprotect` (refused by Ceph while
    // clones exist: the error says so), `rbd snap rm`, `rbd rm`.
    static constexpr std::string_view kGoldenSnapshot = "golden";
    Status seal_golden(const std::string& golden) override;
    Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                      const StorageConfig& config) override;
    Status remove_golden(const std::string& golden) override;

    const RbdStorageOptions& options() const { return options_; }

  private:
    // `rbd ARGS` for the golden `image`'s snapshot; an exit code in
    // `tolerated` (ENOENT: already gone) is success.
    Status run_snapshot_step(const std::vector<std::string>& args, const std::string& what,
                             std::initializer_list<int> tolerated = {}) const;
    Volume rbd_volume(const std::string& name) const;

    RbdStorageOptions options_;
    std::shared_ptr<ProcessRunner> runner_;
};

}  // namespace ds
