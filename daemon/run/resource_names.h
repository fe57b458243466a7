#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ds {

// An instance name is 1-16 characters, lowercase ASCII letters and digits:
// short enough for every backend's names, and without '-', so one
// instance's prefix never begins another instance's names. The error says
// what a valid name is.
Status check_instance_name(std::string_view name);

// The names of everything a daemon creates on hypervisors and storages:
// "disksweep-<instance>-" (prefix()), then what it is. By the prefix a
// restarted daemon finds what an earlier one of the same instance left
// (daemon/recovery.h), and only that: an instance name has no '-'
// (check_instance_name), so one instance's prefix never begins another
// instance's names, and daemons sharing a hypervisor or a storage pool leave
// each other's guests and volumes alone.
class ResourceNames {
  public:
    // An Error (invalid_argument) when `instance` is not a valid instance name.
    static Result<ResourceNames> for_instance(std::string instance);

    const std::string& instance() const { return instance_; }
    const std::string& prefix() const { return prefix_; }  // "disksweep-<instance>-"
    std::string vm(std::int64_t run_id) const;             // prefix() + "r<run_id>"
    std::string volume(std::int64_t run_id) const;         // vm(run_id) + "-data"
    // The guest that checks a durability run's crash images: vm(run_id) + "-check".
    std::string checker_vm(std::int64_t run_id) const;
    std::string probe() const;  // prefix() + "probe": the KVM probe's guest and volume
    // The guest that prepares golden volume `index` of a sweep, and the
    // volume: prefix() + "g<sweep_id>-<index>", and that + "-golden".
    std::string golden_vm(std::int64_t sweep_id, int index) const;
    std::string golden_volume(std::int64_t sweep_id, int index) const;
    // Whether `volume` is a golden volume of this instance: recovery removes
    // those last (with StorageBackend::remove_golden), after their clones.
    bool is_golden_volume(std::string_view volume) const;

  private:
    explicit ResourceNames(std::string instance);
    std::string instance_;
    std::string prefix_;
};

}  // namespace ds
