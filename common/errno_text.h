// errno values as text for error messages.
#pragma once

#include <string>

namespace ds {

// strerror's description: "No such file or directory".
std::string errno_text(int error_number);

// The symbolic name and the description: "EAGAIN (Resource temporarily
// unavailable)"; "errno 4242 (unknown error)" for a number glibc does not
// know.
std::string describe_errno(int error_number);

}  // namespace ds
