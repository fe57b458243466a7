// GET /v1/configurations/{id}/apply: a stored configuration, found by its id
// or a unique prefix of it, rendered by apply_snippets.h; for a server
// settings format (mycnf) with the workload of that server it ran (from its
// runs in any sweep).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/apply/apply_snippets.h"
#include "daemon/store/store.h"

namespace ds {

// The one id of `candidates` that starts with `prefix` (an id, or its first
// hex digits as reports show them). errc::kInvalidArgument when `prefix` is
// not 1-16 lowercase hex digits or matches several (naming them),
// errc::kNotFound when it matches none.
Result<std::string> unique_config_id(const std::string& prefix,
                                     const std::vector<std::string>& candidates);

// unique_config_id over the configurations the store holds runs of. A whole
// id (16 digits) is taken as it is, without a scan.
Result<std::string> resolve_config_id(Store& store, const std::string& id_or_prefix);

// The workloads among `runs` whose server settings the apply format
// `format` prints (their kind's rules' format: "mycnf" for the MariaDB
// kinds), distinct by their JSON, in the order of first appearance.
std::vector<Workload> server_settings_workloads(const std::vector<RunRecord>& runs,
                                                std::string_view format);

// The workload whose server variables a snippet in the format of `rules`
// prints, among `workloads` (server_settings_workloads of that format): the
// one named `name`, or when `name` is empty the first one if all of them set
// the same variables. errc::kInvalidArgument, naming the rules' server ("the
// MariaDB workload"), when the configuration ran no such workload (listing
// the kinds that are), when none is called `name`, or when they differ and
// none is named (listing the names to choose from).
Result<Workload> choose_server_settings_workload(const ServerSettingsRules& rules,
                                                 const std::vector<Workload>& workloads,
                                                 const std::string& name);

// What the durability runs among `runs` (one configuration's, any sweep)
// measured of what `request` applies: for a server settings format (mycnf)
// the runs of workloads setting the same server variables as
// request.workload; for the formats that apply the disk alone (qm, libvirt,
// fstab) the runs of workloads setting no risky server variable by their
// kind's rules (ds::server_settings_risks), so that a loss the server's
// settings caused (InnoDB's) is not charged to the disk.
DurabilityResult applicable_durability(const std::vector<RunRecord>& runs,
                                       const ApplyRequest& request);

// The route's answer:
//   {"config_id": the full id, "format": "qm", "settings": {..canonical..},
//    "durability_risks": [..], "notes": [..], "body": "..", "snippet": "..",
//    "measured_durability": {..DurabilityResult::to_json of
//        applicable_durability.., "covers": [the risks it speaks for]}}
// ("workload": its name, for a server settings format). Errors: the store's (kNotFound for an
// unknown configuration), and those above and of render_apply_snippet.
Result<Json> apply_configuration(Store& store, const std::string& id_or_prefix,
                                 ApplyRequest request);

}  // namespace ds
