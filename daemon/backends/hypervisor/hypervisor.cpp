#include "daemon/backends/hypervisor/hypervisor.h"

namespace ds {
std::string_view to_string(Accel accel) {
    return accel == Accel::kKvm ? "kvm" : "tcg";
}
}  // namespace ds
