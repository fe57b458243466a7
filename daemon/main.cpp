// disksweepd: the host daemon. All logic lives in disksweepd_lib.
#include "daemon/daemon.h"

int main(int argc, char** argv) {
    return ds::daemon_main(argc, argv);
}
