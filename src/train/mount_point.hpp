// Which mounted file system holds a path, from /proc/self/mountinfo: for messages about what a
// file system does not support (flock on Lustre mounted with noflock, some NFS mounts).
#pragma once

#include <string>

namespace dl {

struct MountPoint {
  std::string path;    // where it is mounted, e.g. "/lustre/scratch"; empty: not found
  std::string type;    // e.g. "lustre", "nfs4"
  std::string source;  // e.g. "10.0.0.1@tcp:/scratch"

  // "mount /lustre/scratch of type lustre from 10.0.0.1@tcp:/scratch", or "an unknown file
  // system".
  std::string describe() const;
};

// The mount whose mount point is the longest leading part of `path` (made absolute, links
// resolved as far as it exists); the last such line when one mount hides another. `mountinfo`
// is the table to read (tests pass their own).
MountPoint mount_point_of(const std::string& path,
                          const std::string& mountinfo = "/proc/self/mountinfo");

}  // namespace dl
