#include "data/data_format.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/text_match.hpp"
#include "core/error.hpp"

namespace dl {

const std::vector<DataFormatKind>& data_formats() {
  static const std::vector<DataFormatKind> formats{
      idx_data_format(),
      cifar10_data_format(),
      cifar100_data_format(),
      image_folder_data_format(),
      csv_data_format(),
  };
  return formats;
}

const DataFormatKind& data_format(DataFormat format) {
  const auto& formats = data_formats();
  const auto it = std::find_if(formats.begin(), formats.end(),
                               [format](const DataFormatKind& k) { return k.format == format; });
  DL_CHECK(it != formats.end(), "every DataFormat is registered in data_format.cpp");
  return *it;
}

const DataFormatKind* find_data_format(std::string_view name) {
  const auto& formats = data_formats();
  const auto it =
      std::find_if(formats.begin(), formats.end(),
                   [name](const DataFormatKind& k) { return equals_ignoring_case(k.name, name); });
  return it == formats.end() ? nullptr : &*it;
}

std::vector<std::string> data_format_names() {
  std::vector<std::string> names;
  for (const DataFormatKind& k : data_formats()) names.emplace_back(k.name);
  return names;
}

std::vector<std::string> formats_with_key(std::string_view key) {
  std::vector<std::string> names;
  for (const DataFormatKind& k : data_formats())
    for (const auto& field : k.keys)
      if (field.key == key) names.emplace_back(k.name);
  return names;
}

int one_channel(const Config& /*config*/) {
  return 1;
}

void check_single_validation_source(const ReadContext& ctx, const DataConfig& data, bool given,
                                    const std::string& key, const std::string& remove) {
  if (!given || data.validationSplit <= 0.0) return;
  fail_at(ctx.remembered("data.validationSplit"),
          fmt::format("data.validationSplit and data.{} both name a validation set", key),
          "keep one: validationSplit: 0, or remove " + remove);
}

}  // namespace dl
