// CPU implementation of the Backend's updater op (see backend/backend.hpp for the contract).
//
// DL4J's update rules (Nd4j's GradientUpdater classes and libnd4j's updater helpers), one pass
// over the buffers per step, all arithmetic in float except Adam's scalar step size:
//   SGD:       p -= lr * g
//   NESTEROVS: state v.  mv = momentum * v;  v = mv - lr * g;  p -= mv - (1 + momentum) * v
//              (i.e. p += -momentum * v_prev + (1 + momentum) * v)
//   ADAM:      state m, then v.  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//              alpha_t = lr sqrt(1 - b2^t) / (1 - b1^t) with t = h.step (computed in double;
//              DL4J replaces a NaN, infinite or zero alpha_t by epsilon, and so do we);
//              p -= alpha_t m / (sqrt(v) + eps)
//   RMSPROP:   state s.  s = decay s + (1 - decay) g^2;  p -= lr g / (sqrt(s) + eps)
//              (eps outside the sqrt, as DL4J does). DL4J starts s at eps, not 0: whoever
//              initializes the state for a new run should fill it with h.epsilon.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// One step of DL4J's update rule for h.type over n parameters (see UpdaterHyper), each after the
// terms of the range it is in (UpdateTerms).
void updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                  float* state, const UpdateTermRanges& terms = {});

// Adam's bias-corrected step size alpha_t for h.step, as used by updater_step (the op
// contract's, backend/ops/updater.hpp).
using ops::adam_step_size;

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
