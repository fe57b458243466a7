#include "daemon/backends/hypervisor/hypervisor.h"

#include <set>

namespace ds {
std::string_view to_string(Accel accel) {
    return accel == Accel::kKvm ? "kvm" : "tcg";
}

Status check_extra_disks(const std::vector<ExtraDisk>& disks) {
    if (disks.size() > kMaxExtraDisks) {
        return make_error(errc::kInvalidArgument, std::to_string(disks.size()) +
                                                      " extra disks: a guest takes at most " +
                                                      std::to_string(kMaxExtraDisks));
    }
    std::set<std::string_view> serials = {protocol::kRootDiskSerial, protocol::kDataDiskSerial};
    for (std::size_t i = 0; i < disks.size(); ++i) {
        const std::string where = "extra disk " + std::to_string(i) + ": ";
        const std::string problem = protocol::disk_serial_problem(disks[i].serial);
        if (!problem.empty()) return make_error(errc::kInvalidArgument, where + problem);
        if (!serials.insert(disks[i].serial).second) {
            return make_error(errc::kInvalidArgument,
                              where + "serial " + disks[i].serial + " is already taken");
        }
    }
    return ok_status();
}
}  // namespace ds
