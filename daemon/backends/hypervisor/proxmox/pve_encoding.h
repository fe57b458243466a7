// How a request to the Proxmox VE API is spelled, as PVE expects it:
//  * paths: segments percent-encoded one by one (a UPID holds ':', '@', '!');
//  * parameters: query strings of GET/DELETE (booleans as 1/0, array
//    parameters as the key repeated once per item, `command=a&command=b`) and
//    JSON bodies of POST/PUT (PveParams, below, says why JSON);
//  * property strings (`local-lvm:4,cache=unsafe,discard=on,ssd=1`): the
//    default key's bare value first, then KEY=VALUE pairs in the order given.
// And the task ids (UPIDs) long operations answer with, and a VM config's
// values read as text.
//
// Pure functions over data: no I/O, testable without a server.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// RFC 3986 percent-encoding: everything but A-Z a-z 0-9 - . _ ~ as %XX.
std::string pve_percent_encode(std::string_view text);

// "/nodes/pve1/tasks/UPID%3Apve1%3A..." from {"nodes", "pve1", "tasks", upid}.
std::string pve_path(std::initializer_list<std::string_view> segments);

// PVE's spelling of a number ("12.5", "100", "1e+21"): the shortest text
// that reads back as the same double. Empty for NaN and infinities.
std::string pve_number_text(double value);

// A VM config's value of `key` (GET .../config) as text: PVE gives numbers
// as numbers ("cores": 2), the rest as strings. nullopt when it has none.
std::optional<std::string> pve_config_text(const Json& config, const std::string& key);

// PVE's value formats (pve-common's JSONSchema), for values disksweep puts in
// front of PVE on a user's behalf:
//  * pve-vmid: a VM id, 100 ..= 999999999;
//  * pve-storage-id: a letter, then letters, digits, '-', '_', '.', ending in
//    a letter or digit (case-insensitive), e.g. "local-lvm".
inline constexpr std::int64_t kPveVmidMin = 100;
inline constexpr std::int64_t kPveVmidMax = 999999999;
bool is_pve_vmid(std::int64_t vmid);
bool is_pve_storage_id(std::string_view text);

// A property string built from ordered key/value data. Keys are PVE's option
// names (lower-case letters, digits, '_' and '-'); a value may not hold ','
// (PVE splits on it) and the default value may not hold '=' (it would read
// as a key). Checked by encode(), which names the offending key.
class PvePropertyString {
  public:
    PvePropertyString() = default;
    // `default_value` is the default key's value, written first without its
    // key: the volume of a drive ("local-lvm:4"), the model of a net device.
    explicit PvePropertyString(std::string default_value);

    PvePropertyString& set(std::string key, std::string value);
    PvePropertyString& set_flag(std::string key, bool value);  // 1 / 0
    PvePropertyString& set_integer(std::string key, std::int64_t value);
    PvePropertyString& set_number(std::string key, double value);  // pve_number_text

    Result<std::string> encode() const;

    // Reads a property string as PVE prints it (e.g. a drive of GET .../config):
    // parts without '=' are the default value (at most one), the rest KEY=VALUE.
    static Result<PvePropertyString> parse(std::string_view text);

    const std::string& default_value() const { return default_value_; }
    const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
    std::optional<std::string> get(std::string_view key) const;

  private:
    std::string default_value_;
    std::vector<std::pair<std::string, std::string>> entries_;
};

// The parameters of one request, in order. A property string that does not
// encode, a number that is not finite or a key given twice is kept as the
// first error and returned by the encoders.
//
// POST and PUT send them as a JSON body (encode_json), not as a form. Why:
// pve-http-server decodes a form with split(/=/) (src/PVE/APIServer/AnyEvent.pm,
// decode_urlencoded), and Perl's split drops trailing empty fields, so `key=`
// arrives as an undefined value: PVE::JSONSchema::check_prop then answers
// "property is missing and it is not optional" (agent/file-write's content="")
// or, for an optional key, silently does as if it had not been sent. A JSON
// body (extract_params: decode_json when the Content-Type is
// application/json) carries every value as it is. PVE::JSONSchema::check_type
// accepts JSON's values for its types: a string for "string"; a JSON integer
// for "integer" and a JSON number for "number" (is_integer/is_number match
// their text); 1/0 for "boolean" (`$value eq '1'`/`'0'`, exactly what a form
// gives the handlers; JSON true/false would pass too, as JSON::is_bool, but
// would reach them as objects); a JSON array for "array" (check_type wants an
// ARRAY ref, which only repeated form keys gave before). GET and DELETE keep
// the query string (pveproxy refuses a body there), where an empty value is
// refused by encode_query before anything is sent.
class PveParams {
  public:
    PveParams& set(std::string key, std::string value);
    PveParams& set_flag(std::string key, bool value);  // 1 / 0
    PveParams& set_integer(std::string key, std::int64_t value);
    PveParams& set_number(std::string key, double value);  // finite only
    PveParams& set_property_string(std::string key, const PvePropertyString& value);
    // An array parameter (e.g. agent/exec's `command`): a JSON array in a
    // body, the key once per item in a query string.
    PveParams& set_array(std::string key, const std::vector<std::string>& items);

    bool empty() const { return fields_.empty(); }
    // "k=v&k=v", keys and values percent-encoded, for GET and DELETE.
    // errc::kInvalidArgument naming the key for an empty value (PVE's
    // decode_urlencoded would drop it, see above).
    Result<std::string> encode_query() const;
    // {"k": v, ...} for a POST or PUT body (Content-Type application/json).
    Result<std::string> encode_json() const;

  private:
    struct Field {
        std::string key;
        Json value;  // a string, an integer, a number or an array of strings
    };
    PveParams& add(std::string key, Json value);

    std::vector<Field> fields_;
    std::optional<Error> error_;
};

// A task id as PVE::UPID encodes it:
//   UPID:NODE:PID(8 hex):PSTART(8-9 hex):STARTTIME(8 hex):TYPE:ID:USER:
struct PveUpid {
    std::string text;  // the whole UPID, as PVE gave it
    std::string node;  // where the task runs: its status is asked there
    std::string type;  // qmclone, qmstart, qmconfig, ...
    std::string id;    // what it works on, e.g. the VM id
    std::string user;  // who started it (USER@REALM!TOKENID for a token)
};
Result<PveUpid> parse_pve_upid(std::string_view text);

}  // namespace ds
