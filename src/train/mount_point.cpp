#include "train/mount_point.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace dl {

namespace fs = std::filesystem;

namespace {

// mountinfo writes a space, tab, newline and backslash in a path as \040, \011, \012 and \134.
std::string unescape(const std::string& field) {
  const auto is_octal = [&](std::size_t at) { return field[at] >= '0' && field[at] <= '7'; };
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal(i + 1) && is_octal(i + 2) &&
        is_octal(i + 3)) {
      out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// Whether `mount` is `path` or one of the directories above it, compared part by part.
bool holds(const fs::path& mount, const fs::path& path) {
  auto p = path.begin();
  for (auto m = mount.begin(); m != mount.end(); ++m, ++p) {
    if (m->empty()) break;  // the empty last part after a trailing slash
    if (p == path.end() || *m != *p) return false;
  }
  return true;
}

// One line of mountinfo: "36 35 98:0 /root /mount/point options [optional...] - type source
// super-options". False when the line is not of that form.
bool parse_line(const std::string& line, MountPoint& mount) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  for (std::string field; in >> field;) fields.push_back(field);
  if (fields.size() < 7) return false;
  std::size_t dash = 6;
  while (dash < fields.size() && fields[dash] != "-") ++dash;
  if (dash + 2 >= fields.size()) return false;
  mount.path = unescape(fields[4]);
  mount.type = fields[dash + 1];
  mount.source = unescape(fields[dash + 2]);
  return true;
}

fs::path resolved(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return path;
  const fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute : canonical;
}

}  // namespace

std::string MountPoint::describe() const {
  if (path.empty()) return "an unknown file system";
  return fmt::format("mount {} of type {} from {}", path, type, source);
}

MountPoint mount_point_of(const std::string& path, const std::string& mountinfo) {
  const fs::path target = resolved(path);
  std::ifstream table(mountinfo);
  MountPoint best;
  std::size_t best_length = 0;
  for (std::string line; std::getline(table, line);) {
    MountPoint mount;
    if (!parse_line(line, mount) || !holds(mount.path, target)) continue;
    const std::size_t length = fs::path(mount.path).lexically_normal().string().size();
    if (best.path.empty() || length >= best_length) {
      best = mount;
      best_length = length;
    }
  }
  return best;
}

}  // namespace dl
