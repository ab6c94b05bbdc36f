// Words Keras, PyTorch and DL4J's Java builders use for the layers that dl-train spells another
// way, with what to write instead. Where the meaning differs too, the fix says how to translate the
// number: Keras's Dropout(rate) and PyTorch's p are the probability of dropping, dl-train's
// dropOut (DL4J's) the probability of keeping, so the near-typo suggestion alone ("did you mean
// 'dropOut'?") led a Keras user to train with the opposite rate. The config loader consults these
// before its generic unknown-name messages.
#pragma once

#include <optional>
#include <string_view>

#include "core/kinds.hpp"

namespace dl {

// What to write for a key a layer of `type` does not have that is another library's word
// (`rate` in a dropout layer, `momentum` in batch normalization), or nothing.
std::optional<std::string_view> foreign_layer_key_fix(LayerType type, std::string_view key);
// What to write for a name that is another library's word (any letter case), where `kind` is
// what fail_unknown_name calls the name: "layer type" (`flatten`, `Conv2D`, `MaxPooling2D`,
// `relu`) or an enum's kind (enum_kind_name: "dtype", "weight init", "activation", ...); or
// nothing.
std::optional<std::string_view> foreign_name_fix(std::string_view kind, std::string_view text);

}  // namespace dl
