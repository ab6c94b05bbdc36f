// What this machine offers the CUDA backend: visible devices and library versions. Safe without
// a GPU or a driver: the device list is then empty and `problem` says why.
#pragma once

#include <string>
#include <vector>

#include "backend/gpu_devices.hpp"

namespace dl::gpu {

struct DeviceScan {
  std::vector<DeviceInfo> devices;
  std::string problem;  // why no device is visible, with CUDA's own words; empty when some are
  std::string summary;  // the same in a few words, for the one line a CPU fallback prints
};

DeviceScan scan_devices();

// "CUDA runtime 13.0", "CUDA driver 12.8" (or that none is installed), "cuDNN 9.19.0",
// "cuBLAS 13.1.0", "cuBLASLt 13.1.0", "NCCL 2.28.9": the libraries loaded at run time, with the
// version built against where it differs.
std::vector<std::string> library_versions();

}  // namespace dl::gpu
