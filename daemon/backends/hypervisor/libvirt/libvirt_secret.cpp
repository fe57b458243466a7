#include "daemon/backends/hypervisor/libvirt/libvirt_secret.h"

#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/file_descriptor.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/libvirt/libvirt_error.h"

namespace ds {
namespace {

// What follows the guest's name in the usage name of its secret. A space
// cannot end a domain name we make, and '/' is not allowed in a usage name.
constexpr std::string_view kUsageSuffix = " rbd";

// A keyring holds a few keys; anything far larger is not a keyring.
constexpr std::size_t kMaxKeyringBytes = 64 * 1024;

struct SecretFree {
    void operator()(virSecretPtr secret) const { virSecretFree(secret); }
};
using SecretHandle = std::unique_ptr<virSecret, SecretFree>;

std::string_view trimmed(std::string_view text) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!text.empty() && blank(text.front())) text.remove_prefix(1);
    while (!text.empty() && blank(text.back())) text.remove_suffix(1);
    return text;
}

// The value of `name` in section [section] of an INI-style text (Ceph's
// keyring and config syntax): "name = value", '#' and ';' start comments.
std::optional<std::string_view> ini_value(std::string_view text, std::string_view section,
                                          std::string_view name) {
    bool in_section = false;
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        const std::string_view line = trimmed(text.substr(0, end));
        text.remove_prefix(std::min(end + 1, text.size()));
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        if (line.front() == '[') {
            in_section = line.back() == ']' && trimmed(line.substr(1, line.size() - 2)) == section;
            continue;
        }
        const std::size_t equals = line.find('=');
        if (!in_section || equals == std::string_view::npos) continue;
        if (trimmed(line.substr(0, equals)) == name) return trimmed(line.substr(equals + 1));
    }
    return std::nullopt;
}

// Base64 as Ceph writes keys: the alphabet, at most two '=' at the end, a
// multiple of four characters.
bool is_base64(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0) return false;
    std::size_t padding = 0;
    while (padding < 2 && text.size() > padding && text[text.size() - 1 - padding] == '=')
        ++padding;
    return std::all_of(text.begin(), text.end() - static_cast<std::ptrdiff_t>(padding), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
    });
}

// Names the user only: the text is the key, or what should have been it.
Error not_base64(std::string_view user) {
    return make_error(errc::kInvalidArgument,
                      "the key of client." + std::string(user) + " is not base64");
}

Result<SecretBytes> decode_base64(std::string_view text, std::string_view user) {
    if (!is_base64(text)) {
        return not_base64(user);
    }
    SecretBytes decoded(std::string(text.size() / 4 * 3, '\0'));
    const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.bytes().data()),
                                       reinterpret_cast<const unsigned char*>(text.data()),
                                       static_cast<int>(text.size()));
    if (length < 0) {
        return not_base64(user);
    }
    // EVP_DecodeBlock counts the zero bytes the '=' padding stands for.
    const std::size_t padding = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
    decoded.bytes().resize(static_cast<std::size_t>(length) - padding);
    return decoded;
}

// The whole file, at most kMaxKeyringBytes, into wiped memory.
Result<SecretBytes> read_keyring_file(const std::string& path) {
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
        return make_error(errc::kIo, "cannot read keyring " + path + ": " + std::strerror(errno));
    }
    SecretBytes text(std::string(kMaxKeyringBytes + 1, '\0'));
    std::size_t filled = 0;
    while (filled < text.bytes().size()) {
        const ssize_t got =
            ::read(fd.get(), text.bytes().data() + filled, text.bytes().size() - filled);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int error = errno;
            return make_error(errc::kIo,
                              "cannot read keyring " + path + ": " + std::strerror(error));
        }
        if (got == 0) break;
        filled += static_cast<std::size_t>(got);
    }
    if (filled > kMaxKeyringBytes) {
        return make_error(errc::kInvalidArgument, "keyring " + path + " is larger than " +
                                                      std::to_string(kMaxKeyringBytes) +
                                                      " bytes: not a keyring");
    }
    text.bytes().resize(filled);
    return text;
}

// The secret of `vm_name`, or null with libvirt's error set (VIR_ERR_NO_SECRET
// when there is none).
SecretHandle lookup_rbd_secret(_virConnect* connection, const std::string& vm_name) {
    return SecretHandle{virSecretLookupByUsage(connection, VIR_SECRET_USAGE_TYPE_CEPH,
                                               rbd_secret_usage(vm_name).c_str())};
}

}  // namespace

SecretBytes::~SecretBytes() {
    wipe();
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept : bytes_(std::move(other.bytes_)) {
    other.wipe();
}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
    if (this != &other) {
        wipe();
        bytes_ = std::move(other.bytes_);
        other.wipe();
    }
    return *this;
}

void SecretBytes::wipe() {
    // OPENSSL_cleanse: a store the compiler may not drop as dead.
    if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
    bytes_.clear();
}

bool rbd_key_fits_secret(const RbdDisk& disk) {
    return !disk.user.empty() && !disk.keyring.empty();
}

Result<SecretBytes> cephx_key_from_keyring(std::string_view keyring_text, std::string_view user) {
    const std::string section = "client." + std::string(user);
    const std::optional<std::string_view> key = ini_value(keyring_text, section, "key");
    if (!key || key->empty()) {
        return make_error(errc::kInvalidArgument, "no key for " + section + " (no [" + section +
                                                      "] section with a 'key = ...' line)");
    }
    return decode_base64(*key, user);
}

Result<SecretBytes> read_cephx_key(const std::string& keyring_path, const std::string& user) {
    DS_ASSIGN_OR_RETURN(SecretBytes text, read_keyring_file(keyring_path));
    Result<SecretBytes> key = cephx_key_from_keyring(text.bytes(), user);
    if (!key.ok())
        return make_error(key.error().code, "keyring " + keyring_path + ": " + key.error().message);
    return key;
}

std::string rbd_secret_usage(const std::string& vm_name) {
    return vm_name + std::string(kUsageSuffix);
}

std::optional<std::string> guest_of_rbd_secret_usage(std::string_view usage) {
    if (usage.size() <= kUsageSuffix.size() || !usage.ends_with(kUsageSuffix)) return std::nullopt;
    return std::string(usage.substr(0, usage.size() - kUsageSuffix.size()));
}

std::string rbd_secret_xml(const std::string& vm_name) {
    return "<secret ephemeral='yes' private='yes'>\n"
           "  <description>cephx key of the RBD data disk of disksweep guest " +
           xml_escape(vm_name) +
           "</description>\n"
           "  <usage type='ceph'>\n"
           "    <name>" +
           xml_escape(rbd_secret_usage(vm_name)) +
           "</name>\n"
           "  </usage>\n"
           "</secret>\n";
}

Result<bool> has_secret_driver(_virConnect* connection, const std::string& uri) {
    if (virConnectNumOfSecrets(connection) >= 0) return true;
    if (last_libvirt_error_code() == VIR_ERR_NO_SUPPORT) {
        reset_libvirt_error();
        return false;
    }
    return libvirt_error(errc::kUnavailable, "cannot count secrets", uri);
}

Result<std::string> define_rbd_secret(_virConnect* connection, const std::string& uri,
                                      const std::string& vm_name, const SecretBytes& key) {
    DS_TRY(undefine_rbd_secret(connection, uri, vm_name));
    SecretHandle secret{virSecretDefineXML(connection, rbd_secret_xml(vm_name).c_str(),
                                           VIR_SECRET_DEFINE_VALIDATE)};
    if (!secret) return libvirt_error(errc::kHypervisor, "cannot define secret", uri, vm_name);
    char uuid[VIR_UUID_STRING_BUFLEN] = {};
    const auto* value = reinterpret_cast<const unsigned char*>(key.bytes().data());
    if (virSecretSetValue(secret.get(), value, key.bytes().size(), 0) < 0 ||
        virSecretGetUUIDString(secret.get(), uuid) < 0) {
        Error error =
            libvirt_error(errc::kHypervisor, "cannot set the secret's value", uri, vm_name);
        virSecretUndefine(secret.get());
        reset_libvirt_error();
        return error;
    }
    return std::string(uuid);
}

Status undefine_rbd_secret(_virConnect* connection, const std::string& uri,
                           const std::string& vm_name) {
    SecretHandle secret = lookup_rbd_secret(connection, vm_name);
    if (!secret) {
        if (last_libvirt_error_code() != VIR_ERR_NO_SECRET) {
            return libvirt_error(errc::kHypervisor, "cannot look up secret", uri, vm_name);
        }
        reset_libvirt_error();
        return ok_status();
    }
    // Another thread may have undefined it since the lookup: gone is gone.
    if (virSecretUndefine(secret.get()) < 0 && last_libvirt_error_code() != VIR_ERR_NO_SECRET) {
        return libvirt_error(errc::kHypervisor, "cannot undefine secret", uri, vm_name);
    }
    reset_libvirt_error();
    return ok_status();
}

Result<std::vector<std::string>> guests_with_rbd_secrets(_virConnect* connection,
                                                         const std::string& uri,
                                                         const std::string& prefix) {
    virSecretPtr* secrets = nullptr;
    const int count = virConnectListAllSecrets(connection, &secrets, 0);
    if (count < 0) return libvirt_error(errc::kHypervisor, "cannot list secrets", uri);
    std::vector<std::string> guests;
    for (int i = 0; i < count; ++i) {
        const SecretHandle secret{secrets[i]};
        if (virSecretGetUsageType(secret.get()) != VIR_SECRET_USAGE_TYPE_CEPH) continue;
        const char* usage = virSecretGetUsageID(secret.get());  // owned by the secret object
        if (usage == nullptr) continue;
        const std::optional<std::string> guest = guest_of_rbd_secret_usage(usage);
        if (guest && guest->starts_with(prefix)) guests.push_back(*guest);
    }
    std::free(secrets);
    std::sort(guests.begin(), guests.end());
    return guests;
}

}  // namespace ds
