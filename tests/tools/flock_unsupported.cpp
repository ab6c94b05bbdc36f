// LD_PRELOAD shim for the CLI tests: flock(2) fails with ENOLCK, as it does on a file system
// mounted without flock support (Lustre with noflock, some NFS mounts), so that the real
// dl-train binary meets such a run directory on any machine (tests/cli/run_directory_claim.sh).
// <sys/file.h> is not included: its declaration carries glibc's exception specification.
#include <cerrno>

extern "C" int flock(int /*fd*/, int /*operation*/) {
  errno = ENOLCK;
  return -1;
}
