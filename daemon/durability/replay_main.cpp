// disksweep-replay: all logic lives in daemon/durability/replay_tool.h.
#include <iostream>
#include <string>
#include <vector>

#include "daemon/durability/replay_tool.h"

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    return ds::durability::replay_tool_main(args, std::cout, std::cerr);
}
