// Random networks for the tests that must hold on any network a user may write, not only on the
// ones the tests name: a seed gives the config of a small graph (image or flat input) built from
// the blocks people write — residual blocks with and without projection, branches joined by
// concat, a branch from the network's input, a layer read again much later, batch normalization
// before or after its activation, every activation, pooling, dropout, global pooling, dense
// layers, and here and there convolutions wide enough for the CPU's Winograd path — and always
// a valid one (every layer read, every merge's shapes fitting). The same seed gives the same
// text on every machine (std::mt19937 is specified to the bit; no distribution object, whose
// results the standard leaves to the library, is used).
#pragma once

#include <string>

namespace dl::testing {

struct RandomNetwork {
  std::string yaml;  // a whole config: seed, weightInit, inputType and layers
};

// kAny: every activation. kSmooth: for the checks that differentiate the loss numerically, a loss
// smooth and well-conditioned at a finite difference's scale: no ReLU, leaky ReLU or hardswish,
// whose kinks bend the differences wherever many values sit near them, and batch normalization
// with eps 1e-3 (Keras's default), since with 1e-5 a channel whose values nearly agree across the
// batch has its float rounding amplified a hundredfold. Max pooling stays (its choice moves only
// where two values of a window cross).
enum class NetworkKind { kAny, kSmooth };

// What the data fixes, where a test has data of its own; zero: drawn from the seed.
struct FixedEnds {
  int features = 0;                         // a flat input of this size
  int height = 0, width = 0, channels = 0;  // an image input (when features is 0)
  int classes = 0;
};

RandomNetwork random_network(unsigned seed, NetworkKind kind = NetworkKind::kAny,
                             const FixedEnds& ends = {});

// How many networks a test runs: `usual`, or the count in DL_RANDOM_NETWORKS for a longer search.
unsigned random_network_count(unsigned usual);

}  // namespace dl::testing
