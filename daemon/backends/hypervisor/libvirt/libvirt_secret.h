// The cephx key of a guest's RBD data disk as a libvirt secret.
//
// Where the connection has a secret driver (libvirtd's qemu:///system, a
// remote host), QEMU gets the key from libvirt: the daemon reads it from the
// disk's keyring, puts it in an ephemeral, private secret of usage 'ceph'
// named after the guest, and the domain XML refers to it from <auth>. libvirt
// hands it to QEMU itself, so QEMU (which runs as libvirt's QEMU user there)
// needs no access to the root-only keyring. libvirt 9.0's embedded driver has
// no secret driver; there QEMU reads the key through <config file> instead
// (domain_xml.h).
//
// The key is never logged and never part of an error message; the bytes read
// and decoded are wiped when dropped (SecretBytes).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "daemon/backends/storage/storage.h"

// libvirt's connection handle, without pulling libvirt's headers into ours.
struct _virConnect;

namespace ds {

// Bytes that are overwritten with zeros when destroyed or moved from: the
// text of a keyring, a decoded cephx key. Move-only, so no stray copy lives on.
class SecretBytes {
  public:
    SecretBytes() = default;
    explicit SecretBytes(std::string bytes) : bytes_(std::move(bytes)) {}
    ~SecretBytes();
    SecretBytes(SecretBytes&& other) noexcept;
    SecretBytes& operator=(SecretBytes&& other) noexcept;
    SecretBytes(const SecretBytes&) = delete;
    SecretBytes& operator=(const SecretBytes&) = delete;

    const std::string& bytes() const { return bytes_; }
    // For filling in place (reading, decoding).
    std::string& bytes() { return bytes_; }

  private:
    void wipe();
    std::string bytes_;
};

// Whether `disk` names a cephx user and a keyring file of its own: a key the
// daemon can read and put in a libvirt secret. Otherwise QEMU authenticates
// through a ceph.conf (the disk's or Ceph's default), as without a secret
// driver.
bool rbd_key_fits_secret(const RbdDisk& disk);

// The key of client.USER in the text of a Ceph keyring ("[client.USER]",
// then "key = BASE64" in that section), decoded from base64: the bytes
// virSecretSetValue takes. errc::kInvalidArgument when there is no such
// section, no key in it, or the key is not base64; the message names the
// user, never the key or a line of the text.
Result<SecretBytes> cephx_key_from_keyring(std::string_view keyring_text, std::string_view user);

// cephx_key_from_keyring of the file at `keyring_path` (errc::kIo when it
// cannot be read; messages name the path).
Result<SecretBytes> read_cephx_key(const std::string& keyring_path, const std::string& user);

// The usage name of the secret of guest `vm_name`'s RBD disk:
// "<vm_name> rbd". It starts with the guest's name, which starts with the
// daemon's resource prefix, so what an earlier daemon left is found by prefix.
std::string rbd_secret_usage(const std::string& vm_name);

// The guest whose secret has usage name `usage` (rbd_secret_usage), or
// nullopt for a usage name not made by rbd_secret_usage.
std::optional<std::string> guest_of_rbd_secret_usage(std::string_view usage);

// The <secret> document for guest `vm_name`'s key: ephemeral='yes' (libvirt
// keeps it in memory only, never on disk), private='yes' (no libvirt client
// can read the value back), <usage type='ceph'> named rbd_secret_usage.
std::string rbd_secret_xml(const std::string& vm_name);

// The libvirt calls. `uri` only names the connection in error messages.

// Whether `connection` has a secret driver: virConnectNumOfSecrets works
// (true) or fails with VIR_ERR_NO_SUPPORT (false: the embedded QEMU driver,
// the test driver). Any other failure is an errc::kUnavailable error.
Result<bool> has_secret_driver(_virConnect* connection, const std::string& uri);

// Defines the secret of guest `vm_name` holding `key` and returns its UUID
// (the form <secret uuid> takes). A secret of that usage left by an earlier
// guest of the same name is undefined first. On failure nothing is left
// defined. errc::kHypervisor.
Result<std::string> define_rbd_secret(_virConnect* connection, const std::string& uri,
                                      const std::string& vm_name, const SecretBytes& key);

// Undefines the secret of guest `vm_name`. Succeeds when there is none.
// errc::kHypervisor.
Status undefine_rbd_secret(_virConnect* connection, const std::string& uri,
                           const std::string& vm_name);

// The guests, by name, that have a secret of rbd_secret_usage and whose names
// start with `prefix`, sorted. errc::kHypervisor.
Result<std::vector<std::string>> guests_with_rbd_secrets(_virConnect* connection,
                                                         const std::string& uri,
                                                         const std::string& prefix);

}  // namespace ds
