// Where each layer's input gradients go in the backward pass, planned once from the graph
// (Model::route_gradients). Caffe's principle: a layer read by several others gets the sum of
// their gradients. Three things keep that cheap:
//  - a layer read once gets its reader's gradient written straight into its output-gradient
//    buffer; where several read it, the highest writer writes straight and each other one into a
//    scratch slot that is then added;
//  - a reader whose backward leaves its inputs' gradients in its own dy (Layer::
//    passes_gradient_through: the residual add, an activation fused into the batch normalization
//    before it) copies nothing: an input it alone reads uses the reader's buffer as its own output
//    gradient (an alias), provided that input's backward only reads its dy
//    (Layer::backward_keeps_output_gradient), so nothing changes the buffer under another reader;
//  - where such an input has other readers, the pass-through reader's dy is added into the sum
//    (a deferred sum) once the sum has its first term, instead of being copied to a scratch slot
//    first. With two readers, as at every residual fan-out, the sum is the same one float add as
//    before, so the same bits; with three or more, the order of the adds may differ;
//  - where that sum falls on the step just before the layer's own and the layer can add one
//    more term to its dy as it reads it (Layer::absorbs_gradient_term: the residual add, in its
//    activation's gradient pass), the layer adds it (absorbed) and the sum costs no pass.
#pragma once

#include <vector>

namespace dl {

struct GradientRoutes {
  enum class Mode {
    kNone,      // the network's input: no gradient
    kStraight,  // written into the source's output-gradient buffer
    kScratch,   // written into a scratch slot, added into the source's buffer after the step
    kInPlace,   // left in the reader's dy (alias or deferred sum): the layer is handed dy
  };
  struct Input {
    Mode mode = Mode::kNone;
    int scratch_slot = -1;  // kScratch
  };
  // A sum after a step's backward: into the output gradient of layer `into`, from a scratch slot
  // (from_slot >= 0) or from the output gradient of layer `from_layer`.
  struct Sum {
    int into = -1;
    int from_slot = -1;
    int from_layer = -1;
  };
  std::vector<std::vector<Input>> inputs;    // per layer, per source
  std::vector<std::vector<Sum>> sums_after;  // per layer (step), in order
  // Per layer: the layer whose buffer holds its output gradient (itself unless an alias).
  std::vector<int> owner;
  // Per layer: the layer whose output gradient its backward adds to its own dy, or -1.
  std::vector<int> absorbed;
  // Per layer owning a buffer: the backward steps of the first write and the last read of that
  // buffer (the input of plan_gradient_slots); -1 for an alias, which has no buffer of its own.
  std::vector<int> first_write, last_read;
  int scratch_slots = 0;
};

// The layers' properties the plan reads: per layer, Layer's passes_gradient_through,
// backward_keeps_output_gradient and absorbs_gradient_term, and read_at, the backward step at
// which its output gradient is last read (its own index, or that of the convolution a pooling is
// fused into).
struct GradientRouteInputs {
  std::vector<bool> passes_through, keeps_output_gradient, absorbs;
  std::vector<int> read_at;
};

// sources: per layer, the layers it reads (-1: the network's input).
GradientRoutes plan_gradient_routes(const std::vector<std::vector<int>>& sources,
                                    const GradientRouteInputs& layers);

}  // namespace dl
