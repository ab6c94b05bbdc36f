#include "core/node_identity.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace dl {

namespace {

constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";
constexpr std::size_t kHostNameBytes = 256;  // POSIX allows 255 bytes and the terminator

}  // namespace

std::string node_identity(const std::function<const char*(const char*)>& environment,
                          const std::string& boot_id_path) {
  if (const char* stated = environment("NCCL_HOSTID"); stated != nullptr && *stated != '\0')
    return std::string("NCCL_HOSTID ") + stated;
  char name[kHostNameBytes] = {};
  std::string identity = gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown host";
  std::ifstream boot(boot_id_path);
  std::string boot_id;
  // Without a boot id (not Linux, /proc not mounted) the host name alone, as before.
  if (std::getline(boot, boot_id) && !boot_id.empty()) identity += " boot " + boot_id;
  return identity;
}

std::string node_identity() {
  return node_identity([](const char* variable) { return std::getenv(variable); }, kBootIdPath);
}

}  // namespace dl
