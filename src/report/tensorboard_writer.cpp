#include "report/tensorboard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/posix_write.hpp"
#include "report/build_info.hpp"
#include "report/tfrecord.hpp"

namespace dl {

namespace {

constexpr std::string_view kEventFilePrefix = "events.out.tfevents.";
constexpr std::string_view kEventFileSuffix = ".dl-train";

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string event_file_name(std::int64_t seconds, const std::string& host) {
  return fmt::format("{}{}.{}{}", kEventFilePrefix, seconds, host, kEventFileSuffix);
}

bool is_own_event_file_name(const std::string& name) {
  const std::size_t least = kEventFilePrefix.size() + kEventFileSuffix.size();
  return name.size() > least && name.compare(0, kEventFilePrefix.size(), kEventFilePrefix) == 0 &&
         name.compare(name.size() - kEventFileSuffix.size(), kEventFileSuffix.size(),
                      kEventFileSuffix) == 0;
}

std::string event_file_name_now() {
  return event_file_name(static_cast<std::int64_t>(unix_seconds()), host_name());
}

TensorBoardWriter::TensorBoardWriter(const std::string& directory) {
  if (!tensorboard_built()) encode_file_version_event(0.0);  // throws the reason
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  const double now = unix_seconds();
  path_ = (std::filesystem::path(directory) /
           event_file_name(static_cast<std::int64_t>(now), host_name()))
              .string();
  // O_NOFOLLOW: never written through a link. O_APPEND: a second writer in the same second (a
  // quick resume) adds to the file instead of cutting it; TensorBoard reads any number of
  // version records.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw IoError(fmt::format("cannot create {}: {}", path_, std::strerror(errno)));
  write_record(encode_file_version_event(now));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::write_scalars(std::int64_t step, const std::vector<Scalar>& values) {
  write_record(encode_scalars_event(unix_seconds(), step, values));
}

void TensorBoardWriter::write_session_start(std::int64_t first_step) {
  write_record(encode_session_start_event(unix_seconds(), first_step));
}

void TensorBoardWriter::sync() {
  if (::fdatasync(fd_) != 0)
    throw IoError(fmt::format("cannot sync {}: {}", path_, std::strerror(errno)));
}

void TensorBoardWriter::write_record(const std::string& payload) {
  const std::string record = tfrecord_frame(payload);
  const int error = write_all(fd_, record.data(), record.size());
  if (error != 0) throw IoError(fmt::format("cannot write {}: {}", path_, std::strerror(error)));
}

}  // namespace dl
