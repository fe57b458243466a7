// disksweepd: the host daemon. All logic lives in disksweepd_lib.
#include <iostream>

#include "daemon/config.h"
#include "daemon/daemon.h"

int main(int argc, char** argv) {
    auto parsed = ds::parse_daemon_command_line(argc, argv);
    if (!parsed.ok()) {
        std::cerr << parsed.error().message << "\n";
        return 2;
    }
    if (parsed->exit_now) {
        std::cout << parsed->output;
        return parsed->exit_code;
    }
    return ds::run_daemon(parsed->config);
}
