// disksweepd-injecting: disksweepd with the libvirt backend's fault-injection
// seam filled in, for the axes tier only (never installed, never built into
// disksweepd).
//
// Why a daemon executable of its own: the tiers run the daemon as a process
// (support/daemon_fixture.h) and drive it through hostctl, as users do, so a
// fault has to be inside that process. This main is disksweepd's own (the
// same library, the same command line) plus one thing: run_daemon's
// DaemonSeams carries a DomainXmlFilter that injects the faults named in the
// environment variable DISKSWEEP_TEST_INJECT (a comma-separated list of
// fault_injection.h's names, e.g. "cache,discard,bus"; unset or empty: no
// fault, and this daemon behaves as disksweepd). The variable is read here
// alone, so no build of disksweepd can be made to inject anything.
#include <cstdlib>
#include <iostream>

#include "axes/fault_injection.h"
#include "daemon/daemon.h"

namespace {

ds::DomainXmlFilter fault_filter(std::vector<const ds::test::InjectedFault*> faults) {
    return [faults = std::move(faults)](const ds::VmRequest& request, std::string xml) {
        for (const ds::test::InjectedFault* fault : faults) {
            if (!fault->applies(request.config)) continue;
            std::cerr << "disksweepd-injecting: guest " << request.name << ": injected "
                      << fault->name << " fault (" << fault->what << ")" << std::endl;
            xml = fault->inject(std::move(xml));
        }
        return xml;
    };
}

}  // namespace

int main(int argc, char** argv) {
    const char* list = std::getenv("DISKSWEEP_TEST_INJECT");
    auto faults = ds::test::parse_fault_list(list != nullptr ? list : "");
    if (!faults.ok()) {
        std::cerr << "DISKSWEEP_TEST_INJECT: " << faults.error().message << "\n";
        return 2;
    }
    ds::DaemonSeams seams;
    if (!faults->empty()) seams.domain_xml_filter = fault_filter(std::move(faults).value());
    return ds::daemon_main(argc, argv, seams);
}
