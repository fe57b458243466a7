// hostctl: the command-line client of disksweepd's API (see hostctl/commands.h).
#include <iostream>
#include <string>
#include <vector>

#include "hostctl/commands.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto code =
        ds::hostctl::run_hostctl(args, std::cout, std::cerr, ds::hostctl::process_environment());
    return static_cast<int>(code);
}
