// The Event payloads, encoded by protobuf from src/proto/tensorboard_event.proto.
#include "proto/tensorboard_event.pb.h"
#include "report/tensorboard_writer.hpp"

namespace dl {

bool tensorboard_built() {
  return true;
}

std::string encode_file_version_event(double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return event.SerializeAsString();
}

std::string encode_scalars_event(double wall_time, std::int64_t step,
                                 const std::vector<Scalar>& values) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const Scalar& scalar : values) {
    tensorboard::Summary::Value* value = summary->add_value();
    value->set_tag(scalar.tag);
    value->set_simple_value(static_cast<float>(scalar.value));
  }
  return event.SerializeAsString();
}

std::string encode_session_start_event(double wall_time, std::int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  return event.SerializeAsString();
}

}  // namespace dl
