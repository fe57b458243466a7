#include "daemon/run/resource_names.h"

#include <algorithm>
#include <utility>

namespace ds {

Status check_instance_name(std::string_view name) {
    constexpr std::size_t kMaxLength = 16;
    const bool valid_characters = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    });
    if (!name.empty() && name.size() <= kMaxLength && valid_characters) return ok_status();
    return make_error(errc::kInvalidArgument, "'" + std::string(name) +
                                                  "' is not a valid instance name: 1-" +
                                                  std::to_string(kMaxLength) +
                                                  " characters, lowercase ASCII letters and "
                                                  "digits only");
}

ResourceNames::ResourceNames(std::string instance)
    : instance_(std::move(instance)), prefix_("disksweep-" + instance_ + "-") {}

Result<ResourceNames> ResourceNames::for_instance(std::string instance) {
    DS_TRY(check_instance_name(instance));
    return ResourceNames(std::move(instance));
}

std::string ResourceNames::vm(std::int64_t run_id) const {
    return prefix_ + "r" + std::to_string(run_id);
}

std::string ResourceNames::checker_vm(std::int64_t run_id) const {
    return vm(run_id) + "-check";
}

std::string ResourceNames::volume(std::int64_t run_id) const {
    return vm(run_id) + "-data";
}

std::string ResourceNames::probe() const {
    return prefix_ + "probe";
}

std::string ResourceNames::golden_vm(std::int64_t sweep_id, int index) const {
    return prefix_ + "g" + std::to_string(sweep_id) + "-" + std::to_string(index);
}

std::string ResourceNames::golden_volume(std::int64_t sweep_id, int index) const {
    return golden_vm(sweep_id, index) + "-golden";
}

bool ResourceNames::is_golden_volume(std::string_view volume) const {
    return volume.starts_with(prefix_ + "g") && volume.ends_with("-golden");
}

}  // namespace ds
