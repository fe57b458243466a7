#include "common/errno_text.h"

#include <cstring>

namespace ds {

std::string errno_text(int error_number) {
    return std::strerror(error_number);
}

std::string describe_errno(int error_number) {
    const char* name = strerrorname_np(error_number);
    const char* text = strerrordesc_np(error_number);
    std::string out = name ? name : "errno " + std::to_string(error_number);
    out += " (";
    out += text ? text : "unknown error";
    out += ")";
    return out;
}

}  // namespace ds
