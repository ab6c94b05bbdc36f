// Which machine this process runs on, told apart as NCCL tells machines apart: the host name and
// the kernel's boot id (/proc/sys/kernel/random/boot_id, new at every boot and different on every
// machine), or NCCL_HOSTID when it is set. Containers on different machines often share a host
// name (a pod template's, or `localhost`); the boot id tells them apart, while containers on one
// machine share it, as they share its GPUs and cores.
#pragma once

#include <functional>
#include <string>

namespace dl {

// `environment` reads a variable (std::getenv in production; tests pass their own), and
// `boot_id_path` is the kernel's boot id (tests pass a file of their own).
std::string node_identity(const std::function<const char*(const char*)>& environment,
                          const std::string& boot_id_path);

// This machine's identity, from the process's environment and /proc.
std::string node_identity();

// The parts of it on their own, for what must tell a machine and a boot apart whatever
// NCCL_HOSTID says (a claim on a run directory, whose holder's process id means something only
// on the machine and boot that started it): the host name ("unknown" when the system will not
// say; also provenance's and TensorBoard's), and the boot id ("" where there is none).
std::string host_name();
inline constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";
std::string boot_id(const std::string& boot_id_path = kBootIdPath);

}  // namespace dl
