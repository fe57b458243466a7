// disksweep-agent: the guest side of a disksweep run. All logic lives in the
// disksweep_agent library (cli.cpp); see docs/agent-protocol.md.
#include "guestagent/cli.h"

int main(int argc, char** argv) {
    return ds::agent::agent_main(argc, argv);
}
