#include "daemon/backends/hypervisor/libvirt/libvirt_error.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

namespace ds {

int last_libvirt_error_code() {
    virErrorPtr error = virGetLastError();
    return error != nullptr ? error->code : VIR_ERR_OK;
}

void reset_libvirt_error() {
    virResetLastError();
}

Error libvirt_error(const std::string& code, const std::string& fallback, const std::string& uri,
                    const std::string& domain) {
    virErrorPtr error = virGetLastError();
    std::string message = error != nullptr && error->message != nullptr ? error->message : fallback;
    std::string where = uri;
    if (!domain.empty()) where += ", domain " + domain;
    virResetLastError();
    return make_error(code, "libvirt: " + message + " (" + where + ")");
}

}  // namespace ds
