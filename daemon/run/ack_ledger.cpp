#include "daemon/run/ack_ledger.h"

namespace ds {

AckLedger::AckLedger(std::string run_id, std::function<std::optional<std::uint64_t>()> log_bytes)
    : run_id_(std::move(run_id)), log_bytes_(std::move(log_bytes)) {}

Status AckLedger::record(const guest::Ack& ack) {
    if (ack.run_id != run_id_) {
        return make_error(errc::kProtocol, "agent sent an ack for run \"" +
                                               guest::cut_text(ack.run_id, 80) +
                                               "\", not for this run (\"" + run_id_ + "\")");
    }
    const long long expected = static_cast<long long>(entries_.size()) + 1;
    if (ack.id != expected) {
        return make_error(errc::kProtocol, "agent acknowledged record " + std::to_string(ack.id) +
                                               " where record " + std::to_string(expected) +
                                               " was next");
    }
    entries_.push_back({ack.id, log_bytes_ ? log_bytes_() : std::nullopt});
    return ok_status();
}

Status AckLedger::check_result_count(long long reported) const {
    if (reported != static_cast<long long>(entries_.size())) {
        return make_error(errc::kProtocol, "agent reported " + std::to_string(reported) +
                                               " acknowledged records but sent " +
                                               std::to_string(entries_.size()) + " acks");
    }
    return ok_status();
}

Json AckLedger::summary() const {
    Json summary = {{"acks_received", entries_.size()},
                    {"last_id", entries_.empty() ? 0 : entries_.back().id}};
    Json offsets = Json::array();
    for (const AckEntry& entry : entries_) {
        if (entry.log_bytes) offsets.push_back(*entry.log_bytes);
    }
    if (!offsets.empty()) summary["log_bytes_at_ack"] = std::move(offsets);
    return summary;
}

}  // namespace ds
