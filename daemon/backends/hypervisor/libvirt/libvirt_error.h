// libvirt's errors as our Error values. libvirt keeps its last error per
// thread; these read it and reset it, so a later call does not see a stale one.
#pragma once

#include <string>

#include "common/result.h"

namespace ds {

// The calling thread's last libvirt error code (VIR_ERR_OK if none).
int last_libvirt_error_code();

// Forgets the calling thread's last libvirt error (after an expected one).
void reset_libvirt_error();

// "libvirt: <message> (<uri>[, domain <name>])" with error code `code`, from
// the calling thread's last libvirt error (`fallback` if there is none),
// which is then reset.
Error libvirt_error(const std::string& code, const std::string& fallback, const std::string& uri,
                    const std::string& domain = "");

}  // namespace ds
