// A figure (a score, a loss, an accuracy, an F1, a probability) as text output writes it: the
// console, scores.csv, evaluation.txt, early stopping's messages, eval and predict. Every such
// place formats it through here, `fmt::format("loss {:.4f}", figure(loss))`, with the format spec
// it always had, so finite numbers read as before.
//
// Why: fmt (like printf) prints a NaN's sign bit, and the NaN an x86 computation yields (0/0,
// inf - inf) has it set, so a diverged loss read "-nan" in one place and "nan" in another. A NaN
// has no sign that means anything; "nan" is what Python and PyTorch print, and what a reader
// (float(), strtod) takes back. Infinities keep their sign: "inf", "-inf".
#pragma once

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace dl {

struct Figure {
  double value;
};

inline Figure figure(double value) {
  return Figure{value};
}

}  // namespace dl

template <>
struct fmt::formatter<dl::Figure> : fmt::formatter<double> {
  template <class FormatContext>
  auto format(const dl::Figure& f, FormatContext& context) const {
    const double value = std::isnan(f.value) ? std::numeric_limits<double>::quiet_NaN() : f.value;
    return fmt::formatter<double>::format(value, context);
  }
};
