// The CPU backend's own kernels as one table of entry points, filled once per compiled variant
// (kernel_table.cpp, built once per x86-64 level) and called by CpuBackend through the variant
// isa.hpp selects. The signatures are the Backend ops' (backend/backend.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa.hpp"

namespace dl::cpu {

struct KernelTable {
  IsaLevel level;  // what the variant's code needs from the CPU (from the compiler's macros)

  void (*gather_samples)(const std::uint8_t*, const std::int32_t*, std::size_t, const std::int32_t*,
                         int, float*, std::int32_t*);
  void (*gather_transformed)(const std::uint8_t*, const std::int32_t*, const ops::SampleTransform&,
                             const std::int32_t*, int, const float*, const float*, float*,
                             std::int32_t*);
  void (*scale)(std::size_t, float, float*);
  void (*axpy)(std::size_t, float, const float*, float*);
  void (*sum_of_squares)(std::size_t, const float*, float*);
  bool (*all_finite)(std::size_t, const float*);
  void (*clip_values)(std::size_t, float, float*);
  void (*scale_to_norm)(std::size_t, const float*, float, bool, float*);
  void (*dense_forward)(int, int, int, const float*, const float*, const float*, float*);
  void (*dense_backward)(int, int, int, const float*, const float*, const float*, float*, float*,
                         float*);
  std::size_t (*conv2d_workspace_floats)(const Conv2dGeometry&);
  void (*conv2d_forward)(const Conv2dGeometry&, const float*, const float*, const float*, float*,
                         float*);
  void (*conv2d_backward)(const Conv2dGeometry&, const float*, const float*, const float*, float*,
                          float*, float*, float*);
  void (*conv2d_pool_forward)(const ConvPool&, const float*, const float*, const float*, float*,
                              float*, std::int32_t*, float*);
  void (*conv2d_pool_weight_gradient)(const ConvPool&, const float*, const float*, const float*,
                                      const float*, const float*, const std::int32_t*, float*,
                                      float*, float*);
  void (*pool2d_forward)(const Pool2dGeometry&, PoolingType, const float*, float*, std::int32_t*);
  void (*pool2d_backward)(const Pool2dGeometry&, PoolingType, const float*, const float*,
                          const float*, float*, const std::int32_t*);
  void (*activation_forward)(Activation, std::size_t, std::size_t, const float*, float*);
  void (*add_activation_forward)(Activation, std::size_t, const float*, float*);
  void (*add_activation_backward)(Activation, std::size_t, const float*, const float*, const float*,
                                  float*);
  void (*activation_backward)(Activation, std::size_t, std::size_t, const float*, const float*,
                              const float*, float*);
  void (*output_loss)(const OutputLoss&, int, int, const float*, const std::int32_t*, float*,
                      float*, float, float*);
  void (*dropout_forward)(std::size_t, float, std::uint64_t, std::uint64_t, const float*, float*,
                          float*);
  void (*dropout_backward)(std::size_t, const float*, const float*, float*);
  void (*batchnorm_forward_training)(const BatchNormShape&, Activation, float, float, const float*,
                                     const float*, const float*, float*, float*, float*, float*,
                                     float*, float*);
  void (*batchnorm_forward_inference)(const BatchNormShape&, Activation, float, const float*,
                                      const float*, const float*, const float*, const float*,
                                      float*);
  void (*batchnorm_backward)(const BatchNormShape&, Activation, const float*, const float*,
                             const float*, const float*, const float*, const float*, float*, float*,
                             float*);
  void (*updater_step)(const UpdaterHyper&, std::size_t, float*, const float*, float*,
                       const UpdateTermRanges&);
};

// The kernels of the variant selected_isa_variant() names.
const KernelTable& selected_kernels();

}  // namespace dl::cpu
