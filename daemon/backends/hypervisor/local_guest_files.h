// Where a hypervisor backend that runs guests on this host keeps each guest's
// agent socket and console log: DIRECTORY/NAME.agent.sock and
// DIRECTORY/NAME.console.log. Shared by the libvirt backend and the unit
// tests' fake, so both lay out and read these files the same way.
#pragma once

#include <cstddef>
#include <string>

namespace ds {

struct LocalGuestFiles {
    std::string directory;

    std::string agent_socket(const std::string& vm_name) const;
    std::string console_log(const std::string& vm_name) const;
    // The last `max_bytes` of the console log; "" when it is missing or empty.
    std::string console_tail(const std::string& vm_name, std::size_t max_bytes) const;
    // Creates the directory; removes what an earlier guest of that name left
    // (a stale socket would be connected to, a stale log read as this one's).
    // False when the directory cannot be created.
    bool prepare(const std::string& vm_name) const;
    void remove_socket(const std::string& vm_name) const;
    void remove_console_log(const std::string& vm_name) const;
};

}  // namespace ds
