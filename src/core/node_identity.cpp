#include "core/node_identity.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace dl {

namespace {

constexpr std::size_t kHostNameBytes = 256;  // POSIX allows 255 bytes and the terminator

}  // namespace

std::string node_identity(const std::function<const char*(const char*)>& environment,
                          const std::string& boot_id_path) {
  if (const char* stated = environment("NCCL_HOSTID"); stated != nullptr && *stated != '\0')
    return std::string("NCCL_HOSTID ") + stated;
  std::string identity = host_name();
  // Without a boot id (not Linux, /proc not mounted) the host name alone, as before.
  const std::string boot = boot_id(boot_id_path);
  if (!boot.empty()) identity += " boot " + boot;
  return identity;
}

std::string host_name() {
  char name[kHostNameBytes] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "unknown";
}

std::string boot_id(const std::string& boot_id_path) {
  std::ifstream boot(boot_id_path);
  std::string id;
  std::getline(boot, id);
  return id;
}

std::string node_identity() {
  return node_identity([](const char* variable) { return std::getenv(variable); }, kBootIdPath);
}

}  // namespace dl
