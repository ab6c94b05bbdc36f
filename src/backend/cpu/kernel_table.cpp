// This variant's table (kernel_table.hpp): compiled once per x86-64 level with that level's -march,
// in the namespace DL_CPU_ISA names, like the kernels it points to.
#include "backend/cpu/kernel_table.hpp"

#include "backend/cpu/activation.hpp"
#include "backend/cpu/batchnorm.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/conv2d_pool.hpp"
#include "backend/cpu/dense.hpp"
#include "backend/cpu/dropout.hpp"
#include "backend/cpu/gather.hpp"
#include "backend/cpu/gradient_clip.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/output_loss.hpp"
#include "backend/cpu/pooling.hpp"
#include "backend/cpu/updater.hpp"
#include "backend/cpu/vector_ops.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {
// The level the compiler was told it may assume (-march), as the x86-64 levels define them.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__AVX512CD__)
constexpr IsaLevel kBuiltLevel = IsaLevel::kAvx512;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__)
constexpr IsaLevel kBuiltLevel = IsaLevel::kAvx2;
#else
constexpr IsaLevel kBuiltLevel = IsaLevel::kX86_64;
#endif

// The convolution without a samples hook (that argument is for conv2d_pool.cpp alone).
void conv2d_forward_op(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                       float* y, float* workspace) {
  conv2d_forward(g, x, w, b, y, workspace);
}
void conv2d_backward_op(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                        float* dx, float* dw, float* db, float* workspace) {
  conv2d_backward(g, x, w, dy, dx, dw, db, workspace);
}
}  // namespace

extern const KernelTable kKernelTable;
const KernelTable kKernelTable = {
    kBuiltLevel,
    gather_samples,
    gather_transformed,
    scale,
    axpy,
    sum_of_squares,
    all_finite,
    clip_values,
    scale_to_norm,
    dense_forward,
    dense_backward,
    conv2d_workspace_floats,
    conv2d_forward_op,
    conv2d_backward_op,
    conv2d_pool_forward,
    conv2d_pool_weight_gradient,
    pool2d_forward,
    pool2d_backward,
    activation_forward,
    add_activation_forward,
    add_activation_backward,
    activation_backward,
    output_loss,
    dropout_forward,
    dropout_backward,
    batchnorm_forward_training,
    batchnorm_forward_inference,
    batchnorm_backward,
    updater_step,
};

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
