#include "daemon/backends/hypervisor/proxmox/pve_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <regex>
#include <thread>

#include "common/file_descriptor.h"
#include "common/json_fields.h"
#include "common/text.h"
#include "daemon/backends/hypervisor/proxmox/pve_tls.h"
#include "daemon/backends/option_rules.h"

namespace ds {

namespace {

// ---- the options of a Proxmox connection --------------------------------------------------------

using PveOptionRule = OptionRule<PveClientOptions, PveOptionKey>;

Error option_error(std::string_view key, const std::string& why) {
    return pve_option_error(key, why);
}

bool matches(std::string_view value, const std::regex& pattern) {
    return std::regex_match(value.begin(), value.end(), pattern);
}

Status set_host(PveClientOptions& o, std::string_view key, std::string_view value) {
    static const std::regex host(R"([A-Za-z0-9.\-]+|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)");
    if (!matches(value, host)) return option_error(key, "expected a host name or an IP address");
    o.host = value;
    return ok_status();
}

Result<long> parse_whole_number(std::string_view key, std::string_view value, long low, long high) {
    return parse_pve_option_number(key, value, low, high);
}

Status set_port(PveClientOptions& o, std::string_view key, std::string_view value) {
    DS_ASSIGN_OR_RETURN(long port, parse_whole_number(key, value, 1, 65535));
    o.port = static_cast<int>(port);
    return ok_status();
}

Status set_token(PveClientOptions& o, std::string_view key, std::string_view value) {
    // PVE's token id: USER@REALM!TOKENID (pve-userid and pve-tokenid rules).
    static const std::regex token(
        R"([^\s:/@!=]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+)");
    if (!matches(value, token)) {
        return option_error(key, "expected USER@REALM!TOKENID (the secret goes in token_file)");
    }
    o.token_id = value;
    return ok_status();
}

Status set_path(std::string& field, std::string_view key, std::string_view value) {
    if (value.empty() || value.front() != '/')
        return option_error(key, "expected an absolute path");
    field = value;
    return ok_status();
}

Status set_fingerprint(PveClientOptions& o, std::string_view key, std::string_view value) {
    Result<PveFingerprint> parsed = parse_pve_fingerprint(value);
    if (!parsed) return option_error(key, "expected 32 hex bytes, AA:BB:... (pvenode cert info)");
    o.fingerprint = format_pve_fingerprint(*parsed);
    return ok_status();
}

Status set_seconds(std::chrono::milliseconds& field, std::string_view key, std::string_view value) {
    DS_ASSIGN_OR_RETURN(long seconds, parse_whole_number(key, value, 1, 86400));
    field = std::chrono::seconds(seconds);
    return ok_status();
}

const PveOptionRule kOptionRules[] = {
    {{"host", "a node's name or address; its API is https://HOST:PORT/api2/json"}, set_host},
    {{"port", "the API port (default 8006)"}, set_port},
    {{"token", "the API token id, USER@REALM!TOKENID (e.g. disksweep@pve!sweeps)"}, set_token},
    {{"token_file", "path of a file holding the token's secret alone, mode 0600 or stricter"},
     [](PveClientOptions& o, std::string_view k, std::string_view v) {
         return set_path(o.token_secret_file, k, v);
     }},
    {{"ca_file", "PEM file of the CA that signed the node's certificate (chain + name checked)"},
     [](PveClientOptions& o, std::string_view k, std::string_view v) {
         return set_path(o.ca_file, k, v);
     }},
    {{"fingerprint", "SHA-256 of the node's certificate, AA:BB:... (`pvenode cert info`)"},
     set_fingerprint},
    {{"timeout", "seconds one API call may take (default 60)"},
     [](PveClientOptions& o, std::string_view k, std::string_view v) {
         return set_seconds(o.request_timeout, k, v);
     }},
    {{"connect_timeout", "seconds to connect (default 10)"},
     [](PveClientOptions& o, std::string_view k, std::string_view v) {
         return set_seconds(o.connect_timeout, k, v);
     }},
};

const SecretOptionKeys kSecretKeys = {
    {"secret", "token_secret", "password", "key"},
    "the token secret never goes in the config: put it alone in a file of mode 0600 and name it "
    "with token_file=PATH"};

Status apply_option(PveClientOptions& options, const std::string& key, const std::string& value) {
    return apply_option_rule(std::span<const PveOptionRule>(kOptionRules), kSecretKeys,
                             option_error, options, key, value);
}

Status check_complete(const PveClientOptions& o) {
    if (o.host.empty()) return option_error("host", "missing");
    if (o.token_id.empty()) return option_error("token", "missing");
    if (o.token_secret_file.empty()) return option_error("token_file", "missing");
    if (o.ca_file.empty() && o.fingerprint.empty()) {
        return option_error("fingerprint",
                            "give ca_file or fingerprint (or both): the node's certificate is "
                            "never taken on trust");
    }
    return ok_status();
}

// ---- the token secret ---------------------------------------------------------------------------

constexpr std::size_t kMaxSecretBytes = 4096;

Error secret_file_error(const std::string& path, const std::string& why) {
    return make_error(errc::kInvalidArgument, "PVE token secret file " + path + ": " + why);
}

std::string mode_text(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

Status check_secret_file(const std::string& path, const struct stat& info) {
    if (!S_ISREG(info.st_mode)) return secret_file_error(path, "not a regular file");
    if ((info.st_mode & 07777 & ~mode_t{0600}) != 0) {
        return secret_file_error(path, "mode " + mode_text(info.st_mode) +
                                           " is more open than 0600; it must be 0600 or stricter "
                                           "(chmod 600 " +
                                           path + ")");
    }
    if (info.st_uid != ::geteuid() && info.st_uid != 0) {
        return secret_file_error(path, "owned by another user");
    }
    return ok_status();
}

// The secret alone, trailing newline allowed; printable ASCII without blanks
// (PVE's secrets are UUIDs). Never quoted in an error.
Result<std::string> secret_from_text(const std::string& path, std::string text) {
    text = trim_trailing(std::move(text));
    if (text.empty()) return secret_file_error(path, "empty");
    bool printable =
        std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isgraph(c); });
    if (!printable)
        return secret_file_error(path, "holds blanks or control characters besides the secret");
    return text;
}

Result<std::string> read_token_secret(const std::string& path) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd.valid())
        return secret_file_error(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat info {};
    Status checked = ::fstat(fd.get(), &info) == 0 ? check_secret_file(path, info)
                                                   : secret_file_error(path, std::strerror(errno));
    std::string text(kMaxSecretBytes + 1, '\0');
    ssize_t length = checked ? ::read(fd.get(), text.data(), text.size()) : 0;
    fd.reset();
    DS_TRY(checked);
    if (length < 0)
        return secret_file_error(path, std::string("cannot read: ") + std::strerror(errno));
    if (static_cast<std::size_t>(length) > kMaxSecretBytes)
        return secret_file_error(path, "too long");
    text.resize(static_cast<std::size_t>(length));
    return secret_from_text(path, std::move(text));
}

// ---- HTTP status codes --------------------------------------------------------------------------

struct StatusMeaning {
    long status;
    const char* code;
    std::string_view what;
};

const StatusMeaning kStatusMeanings[] = {
    {400, errc::kInvalidArgument, "parameters refused"},
    {401, errc::kHypervisor, "authentication failed (check the token id and its secret)"},
    {403, errc::kForbidden, "permission denied (the token lacks a privilege for this call)"},
    {404, errc::kNotFound, "not found"},
    {501, errc::kUnsupported, "not implemented"},
    {502, errc::kUnavailable, "bad gateway"},
    {503, errc::kUnavailable, "service unavailable"},
    {504, errc::kUnavailable, "gateway timeout"},
    {595, errc::kUnavailable, "node unreachable"},
    {596, errc::kUnavailable, "node connection failed"},
};

StatusMeaning meaning_of(long status) {
    for (const auto& meaning : kStatusMeanings) {
        if (meaning.status == status) return meaning;
    }
    return {status, errc::kHypervisor, "failed"};
}

// ---- one HTTP exchange over curl ----------------------------------------------------------------

constexpr std::size_t kMaxAnswerBytes = 128u << 20;  // file-read's 16 MiB, JSON-escaped

struct HttpAnswer {
    long status = 0;
    std::string reason;  // PVE puts its error message in the reason phrase
    std::string body;
    bool too_large = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* answer = static_cast<HttpAnswer*>(user);
    if (answer->body.size() + size * count > kMaxAnswerBytes) {
        answer->too_large = true;
        return 0;
    }
    answer->body.append(data, size * count);
    return size * count;
}

// "HTTP/1.1 500 VM 101 not running\r\n" -> the reason; later header lines pass.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    std::string_view line(data, size * count);
    if (line.starts_with("HTTP/")) {
        std::size_t first = line.find(' ');
        std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
        std::string_view reason = second == std::string_view::npos ? "" : line.substr(second + 1);
        static_cast<HttpAnswer*>(user)->reason = trim_whitespace(reason);
    }
    return size * count;
}

struct CurlHandle {
    CURL* curl = curl_easy_init();
    curl_slist* headers = nullptr;
    char error[CURL_ERROR_SIZE] = {};
    ~CurlHandle() {
        curl_slist_free_all(headers);
        curl_easy_cleanup(curl);
    }
};

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void set_transfer_options(CurlHandle& handle, const PveClientOptions& options, HttpAnswer& answer) {
    CURL* curl = handle.curl;
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, handle.error);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "disksweep/" DISKSWEEP_VERSION);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
}

// GET/DELETE carry no body (pveproxy refuses one); POST/PUT a form, maybe empty.
// POST and PUT carry a JSON body (PveParams::encode_json; pve-http-server's
// extract_params decodes it with decode_json for this Content-Type).
void set_method_and_body(CurlHandle& handle, PveMethod method, const std::string& body) {
    CURL* curl = handle.curl;
    if (method == PveMethod::kPost || method == PveMethod::kPut) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
        handle.headers = curl_slist_append(handle.headers, "Content-Type: application/json");
        handle.headers = curl_slist_append(handle.headers, "Expect:");
    }
    if (method != PveMethod::kGet && method != PveMethod::kPost) {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(to_string(method)).c_str());
    }
}

// Adds the token header; the local copy is wiped (curl keeps its own).
void set_authorization(CurlHandle& handle, const std::string& token_id, const std::string& secret) {
    std::string header = "Authorization: PVEAPIToken=" + token_id + "=" + secret;
    handle.headers = curl_slist_append(handle.headers, header.c_str());
    handle.headers = curl_slist_append(handle.headers, "Accept: application/json");
    OPENSSL_cleanse(header.data(), header.size());
    curl_easy_setopt(handle.curl, CURLOPT_HTTPHEADER, handle.headers);
}

bool is_tls_failure(CURLcode code) {
    return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
           code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM;
}

Error transfer_error(CURLcode code, const CurlHandle& handle, const HttpAnswer& answer,
                     const PveTlsCheck& tls, const PveClientOptions& options) {
    std::string curl_message = handle.error[0] ? handle.error : curl_easy_strerror(code);
    if (code == CURLE_OPERATION_TIMEDOUT) {
        return make_error(errc::kTimeout, "no answer within " +
                                              std::to_string(options.request_timeout.count()) +
                                              " ms (" + curl_message + ")");
    }
    if (is_tls_failure(code)) {
        return make_error(errc::kHypervisor, "TLS refused: " + tls.explain_failure(curl_message));
    }
    if (code == CURLE_WRITE_ERROR && answer.too_large) {
        return make_error(errc::kProtocol,
                          "answer larger than " + std::to_string(kMaxAnswerBytes) + " bytes");
    }
    if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
        code == CURLE_GOT_NOTHING || code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR) {
        return make_error(errc::kUnavailable, curl_message);
    }
    return make_error(errc::kHypervisor, curl_message);
}

// ---- reading answers ----------------------------------------------------------------------------

// PVE's messages end in "\n" and may span lines ("format error\nscsi1.cache: ...").
std::string one_line(std::string_view text) {
    std::string joined;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = std::min(text.find('\n', start), text.size());
        std::string_view line = trim_whitespace(text.substr(start, end - start));
        if (!line.empty()) joined += (joined.empty() ? "" : "; ") + std::string(line);
        start = end + 1;
    }
    return joined;
}

std::string parameter_errors(const Json& errors) {
    std::string listed;
    for (const auto& [name, message] : errors.items()) {
        std::string text = message.is_string() ? message.get<std::string>() : message.dump();
        listed += (listed.empty() ? "" : "; ") + name + ": " + one_line(text);
    }
    return listed;
}

Error http_error(const HttpAnswer& answer) {
    Json body = Json::parse(answer.body, nullptr, false);
    std::string message = answer.reason;
    if (body.is_object() && body.contains("message") && body["message"].is_string()) {
        message = body["message"].get<std::string>();
    }
    StatusMeaning meaning = meaning_of(answer.status);
    std::string text = "HTTP " + std::to_string(answer.status) + " " + std::string(meaning.what);
    if (!one_line(message).empty()) text += ": " + one_line(message);
    if (body.is_object() && body.contains("errors") && body["errors"].is_object()) {
        text += " [" + parameter_errors(body["errors"]) + "]";
    }
    return make_error(meaning.code, text);
}

Result<Json> parse_envelope(const HttpAnswer& answer) {
    if (answer.status != 200) return http_error(answer);
    Json envelope = Json::parse(answer.body, nullptr, false);
    if (!envelope.is_object() || !envelope.contains("data")) {
        return make_error(errc::kProtocol, "the answer is not PVE's {\"data\": ...} envelope");
    }
    return envelope;
}

// ---- tasks --------------------------------------------------------------------------------------

constexpr int kTaskLogTailLines = 12;

std::optional<int> warnings_of(const std::string& exitstatus) {
    static const std::regex warnings("WARNINGS: ([0-9]+)");
    std::smatch match;
    if (!std::regex_match(exitstatus, match, warnings)) return std::nullopt;
    return std::stoi(match[1].str());
}

std::string describe_task(const PveUpid& upid) {
    return "PVE task " + upid.type + (upid.id.empty() ? "" : " " + upid.id) + " on " + upid.node;
}

}  // namespace

Error pve_option_error(std::string_view key, const std::string& why) {
    return make_error(errc::kInvalidArgument, "proxmox option '" + std::string(key) + "': " + why);
}

Result<long> parse_pve_option_number(std::string_view key, std::string_view value, long low,
                                     long high) {
    long number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size() || number < low ||
        number > high) {
        return pve_option_error(key, "expected a whole number from " + std::to_string(low) +
                                         " to " + std::to_string(high));
    }
    return number;
}

std::span<const PveOptionKey> pve_option_keys() {
    static const std::vector<PveOptionKey> keys =
        option_keys_of(std::span<const PveOptionRule>(kOptionRules));
    return keys;
}

Result<PveClientOptions> pve_client_options(const std::map<std::string, std::string>& options) {
    PveClientOptions parsed;
    for (const auto& [key, value] : options) DS_TRY(apply_option(parsed, key, value));
    DS_TRY(check_complete(parsed));
    return parsed;
}

std::string_view to_string(PveMethod method) {
    switch (method) {
        case PveMethod::kGet:
            return "GET";
        case PveMethod::kPost:
            return "POST";
        case PveMethod::kPut:
            return "PUT";
        case PveMethod::kDelete:
            return "DELETE";
    }
    return "GET";
}

// ---- PveClient ----------------------------------------------------------------------------------

// What a client holds besides its options: the secret and whom it trusts.
struct PveClient::Connection {
    std::string secret;
    PveTrust trust;

    ~Connection() { OPENSSL_cleanse(secret.data(), secret.size()); }

    // Any text that leaves the client passes here: the secret never does.
    std::string redacted(std::string text) const {
        static constexpr std::string_view kMark = "[token secret]";
        if (secret.empty()) return text;
        for (std::size_t at = text.find(secret); at != std::string::npos;
             at = text.find(secret, at + kMark.size())) {
            text.replace(at, secret.size(), kMark);
        }
        return text;
    }

    Result<HttpAnswer> exchange(const PveClientOptions& options, PveMethod method,
                                const std::string& url, const std::string& body) const {
        init_curl_once();
        CurlHandle handle;
        if (handle.curl == nullptr) return make_error(errc::kInternal, "curl_easy_init failed");
        HttpAnswer answer;
        PveTlsCheck tls(trust);
        set_transfer_options(handle, options, answer);
        curl_easy_setopt(handle.curl, CURLOPT_URL, url.c_str());
        set_method_and_body(handle, method, body);
        set_authorization(handle, options.token_id, secret);
        DS_TRY(tls.install(handle.curl));
        CURLcode code = curl_easy_perform(handle.curl);
        if (code != CURLE_OK) return transfer_error(code, handle, answer, tls, options);
        DS_TRY(tls.after_success());
        curl_easy_getinfo(handle.curl, CURLINFO_RESPONSE_CODE, &answer.status);
        return answer;
    }
};

PveClient::PveClient(PveClientOptions options, std::unique_ptr<Connection> connection)
    : options_(std::move(options)), connection_(std::move(connection)) {}

PveClient::~PveClient() = default;

Result<std::unique_ptr<PveClient>> PveClient::create(PveClientOptions options) {
    DS_TRY(check_complete(options));
    auto connection = std::make_unique<Connection>();
    connection->trust.ca_file = options.ca_file;
    if (!options.fingerprint.empty()) {
        DS_ASSIGN_OR_RETURN(PveFingerprint pinned, parse_pve_fingerprint(options.fingerprint));
        connection->trust.pinned = pinned;
    }
    DS_ASSIGN_OR_RETURN(std::string secret, read_token_secret(options.token_secret_file));
    connection->secret = std::move(secret);
    return std::unique_ptr<PveClient>(new PveClient(std::move(options), std::move(connection)));
}

std::string PveClient::base_url() const {
    bool ipv6 = options_.host.find(':') != std::string::npos;
    std::string host = ipv6 ? "[" + options_.host + "]" : options_.host;
    return "https://" + host + ":" + std::to_string(options_.port) + "/api2/json";
}

Result<Json> PveClient::envelope(PveMethod method, std::string_view path, const PveParams& params) {
    const std::string call =
        "PVE " + std::string(to_string(method)) + " " + std::string(path) + ": ";
    const bool has_body = method == PveMethod::kPost || method == PveMethod::kPut;
    Result<std::string> encoded = has_body ? params.encode_json() : params.encode_query();
    if (!encoded) return make_error(encoded.error().code, call + encoded.error().message);
    const bool in_query = !has_body && !encoded->empty();
    std::string url = base_url() + std::string(path) + (in_query ? "?" + *encoded : "");
    Result<HttpAnswer> answer =
        connection_->exchange(options_, method, url, has_body ? *encoded : "");
    Result<Json> envelope = answer ? parse_envelope(*answer) : Result<Json>(answer.error());
    if (!envelope) {
        return make_error(envelope.error().code,
                          connection_->redacted(call + envelope.error().message));
    }
    return envelope;
}

Result<Json> PveClient::call(PveMethod method, std::string_view path, const PveParams& params) {
    DS_ASSIGN_OR_RETURN(Json whole, envelope(method, path, params));
    return std::move(whole.at("data"));
}

Result<PveTaskEnd> PveClient::wait_for_task(std::string_view upid_text,
                                            std::chrono::milliseconds timeout) {
    DS_ASSIGN_OR_RETURN(PveUpid upid, parse_pve_upid(upid_text));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::string status_path = pve_path({"nodes", upid.node, "tasks", upid.text, "status"});
    while (true) {
        Result<Json> status = get(status_path);
        DS_TRY(status);
        if (!status->is_object()) {
            return make_error(errc::kProtocol,
                              describe_task(upid) + ": the task status is not an object");
        }
        if (json_read::string_or_empty(*status, "status") == "stopped") {
            std::string exitstatus = json_read::string_or_empty(*status, "exitstatus");
            return task_end(upid, exitstatus.empty() ? "unknown (no exitstatus)" : exitstatus);
        }
        auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) {
            return make_error(errc::kTimeout, describe_task(upid) + " still running after " +
                                                  std::to_string(timeout.count()) + " ms (" +
                                                  upid.text + ")");
        }
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(options_.task_poll_interval, left));
    }
}

Result<PveTaskEnd> PveClient::task_end(const PveUpid& upid, const std::string& exitstatus) {
    if (exitstatus == "OK") return PveTaskEnd{exitstatus, 0};
    if (std::optional<int> warnings = warnings_of(exitstatus))
        return PveTaskEnd{exitstatus, *warnings};
    Result<std::vector<std::string>> tail = task_log_tail(upid, kTaskLogTailLines);
    std::string log = tail ? join(*tail, " | ") : "(log unavailable: " + tail.error().message + ")";
    return make_error(
        errc::kHypervisor,
        connection_->redacted(describe_task(upid) + " failed: " + exitstatus + "; log: " + log));
}

// The last `lines` lines: PVE pages the log (start, limit) and says how many
// lines there are in the envelope's "total".
Result<std::vector<std::string>> PveClient::task_log_tail(const PveUpid& upid, int lines) {
    const std::string path = pve_path({"nodes", upid.node, "tasks", upid.text, "log"});
    Result<Json> first = envelope(PveMethod::kGet, path, PveParams().set_integer("limit", lines));
    DS_TRY(first);
    const Json& total_field = (*first)["total"];
    int total = total_field.is_number_integer() ? total_field.get<int>() : 0;
    Result<Json> page =
        total > lines
            ? envelope(PveMethod::kGet, path,
                       PveParams().set_integer("start", total - lines).set_integer("limit", lines))
            : std::move(first);
    DS_TRY(page);
    std::vector<std::string> text;
    for (const Json& line : page->at("data")) {
        if (line.is_object()) text.push_back(json_read::string_or_empty(line, "t"));
    }
    return text;
}

Result<PveTaskEnd> PveClient::run_task(PveMethod method, std::string_view path,
                                       const PveParams& params, std::chrono::milliseconds timeout) {
    Result<Json> upid = call(method, path, params);
    DS_TRY(upid);
    if (!upid->is_string()) {
        return make_error(errc::kProtocol, "PVE " + std::string(to_string(method)) + " " +
                                               std::string(path) + ": expected a task id, got " +
                                               upid->dump());
    }
    return wait_for_task(upid->get<std::string>(), timeout);
}

}  // namespace ds
