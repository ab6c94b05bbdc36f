// TensorBoard event files: a TFRecord file (tfrecord.hpp) of Event protobufs
// (src/proto/tensorboard_event.proto), the first holding the file version, each later one a
// Summary of scalars at a step. TensorBoard reads every file named events.out.tfevents.* in a
// directory; each record reaches the operating system when written, so it shows a run live.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dl {

struct Scalar {
  std::string tag;  // e.g. "train/loss"; TensorBoard groups tags by the part before '/'
  double value = 0.0;
};

// Whether this dl-train was built with protobuf (meson: -Donnx=auto finds it; see
// docs/OUTPUTS.md). Without it output.tensorboard: true is refused.
bool tensorboard_built();

// The Event payloads (protobuf wire format); throw ConfigError when not built.
std::string encode_file_version_event(double wall_time);
std::string encode_scalars_event(double wall_time, std::int64_t step,
                                 const std::vector<Scalar>& values);
std::string encode_session_start_event(double wall_time, std::int64_t step);

// "events.out.tfevents.<unix seconds>.<host>.dl-train": the name of an event file. TensorBoard
// reads any name holding "tfevents"; the ending is how a run directory tells dl-train's event
// files from one a user or another tool (PyTorch's SummaryWriter, Keras) put there.
std::string event_file_name(std::int64_t seconds, const std::string& host);
// Whether `name` is one event_file_name wrote, so that --overwrite may delete it.
bool is_own_event_file_name(const std::string& name);
// The event_file_name a writer started now on this host would write, for checks of path lengths.
std::string event_file_name_now();

class TensorBoardWriter {
 public:
  // A new event file in `directory` (created when missing), named by event_file_name, starting with
  // the version record. Throws IoError when it cannot be written, ConfigError when not built.
  explicit TensorBoardWriter(const std::string& directory);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void write_scalars(std::int64_t step, const std::vector<Scalar>& values);
  // This process writes steps from `first_step` on: whatever an earlier process (killed after its
  // last checkpoint) wrote there is out of date, and TensorBoard drops it on reading this.
  void write_session_start(std::int64_t first_step);
  void sync();  // onto the disk (before a checkpoint refers to this point of the run)
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);

  std::string path_;
  int fd_ = -1;
};

}  // namespace dl
