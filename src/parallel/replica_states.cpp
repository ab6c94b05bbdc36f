#include "parallel/replica_states.hpp"

#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace dl {

namespace {

// Host byte order: the bytes go from one rank of a job to another, never to a file.
void put_count(std::string& out, std::uint64_t count) {
  out.append(reinterpret_cast<const char*>(&count), sizeof(count));
}

void put_bytes(std::string& out, const void* data, std::size_t bytes) {
  put_count(out, bytes);
  out.append(static_cast<const char*>(data), bytes);
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  std::uint64_t count() {
    std::uint64_t value = 0;
    take(&value, sizeof(value));
    return value;
  }
  void take(void* out, std::size_t n) {
    if (n > bytes_.size() - at_) throw InternalError("replica states: truncated message");
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }

 private:
  const std::string& bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::string pack(const ReplicaStates& states) {
  std::string out;
  put_count(out, states.updaters.size());
  for (const std::vector<float>& u : states.updaters)
    put_bytes(out, u.data(), u.size() * sizeof(float));
  put_count(out, states.loss_scalers.size());
  for (const std::string& s : states.loss_scalers) put_bytes(out, s.data(), s.size());
  return out;
}

void unpack_into(const std::string& bytes, ReplicaStates& into) {
  Reader in(bytes);
  for (std::uint64_t n = in.count(); n > 0; --n) {
    const std::uint64_t size = in.count();
    if (size % sizeof(float) != 0) throw InternalError("replica states: ragged updater state");
    std::vector<float> u(size / sizeof(float));
    in.take(u.data(), size);
    into.updaters.push_back(std::move(u));
  }
  for (std::uint64_t n = in.count(); n > 0; --n) {
    std::string s(in.count(), '\0');
    in.take(s.data(), s.size());
    into.loss_scalers.push_back(std::move(s));
  }
}

}  // namespace dl
