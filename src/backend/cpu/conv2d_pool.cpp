#include "backend/cpu/conv2d_pool.hpp"

#include <vector>

#include "backend/cpu/activation.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/pooling.hpp"

// The hooks run inside a convolution task, where the activation's and the pooling's own
// parallel_slices calls run in order on the task's thread (thread_pool.hpp).

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Where samples [begin, end) start in each buffer, and the pooling's geometry for them alone.
struct SampleSlice {
  Pool2dGeometry pool;
  std::size_t y_offset = 0, pooled_offset = 0;
  std::size_t y_floats = 0;  // per sample
};

SampleSlice slice_of(const ConvPool& op, int begin, int end) {
  SampleSlice s;
  s.pool = op.pool;
  s.pool.batch = end - begin;
  s.y_floats = ops::conv_output_per_sample(op.conv);
  s.y_offset = static_cast<std::size_t>(begin) * s.y_floats;
  s.pooled_offset = static_cast<std::size_t>(begin) * ops::conv_output_per_sample(op.pool);
  return s;
}

// The running thread's buffer for a task's samples' convolution output (forward) or its gradient
// (a weight-gradient task's dy): the task's samples only, so it stays in the core's cache for the
// op that reads it, and the model's buffer (LeNet's first layer: 5.9 MB at batch 128) is never
// written. It grows to the largest task seen, in the first step, and is kept for the next; a
// task's forward and backward uses never overlap.
float* task_buffer(std::size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

}  // namespace

void conv2d_pool_forward(const ConvPool& op, const float* x, const float* w, const float* b,
                         float* y, float* pooled, std::int32_t* argmax, float* workspace) {
  ops::check_conv_pool(op);
  SamplesHook hook;
  if (!ops::conv_pool_backward_reads_output(op)) {
    hook.place = [&](int begin, int end) {
      return task_buffer(ops::conv_output_per_sample(op.conv) * (end - begin));
    };
  }
  hook.done = [&](int begin, int end, float* ys) {
    const SampleSlice s = slice_of(op, begin, end);
    if (op.activation != Activation::kIdentity) {
      activation_forward(op.activation, end - begin, s.y_floats, ys, ys);
    }
    pool2d_forward(s.pool, op.pooling, ys, pooled + s.pooled_offset, argmax + s.pooled_offset);
  };
  conv2d_forward(op.conv, x, w, b, y, workspace, hook);
}

void conv2d_pool_weight_gradient(const ConvPool& op, const float* x, const float* w, const float* y,
                                 const float* pooled, const float* dpooled,
                                 const std::int32_t* argmax, float* dw, float* db,
                                 float* workspace) {
  ops::check_conv_pool(op);
  conv2d_backward(op.conv, x, w, nullptr, nullptr, dw, db, workspace,
                  [&](int begin, int end) -> const float* {
                    const SampleSlice s = slice_of(op, begin, end);
                    // Read by the activation's gradient alone, which only a y written reaches.
                    const float* ys = y + s.y_offset;
                    float* dys = task_buffer(s.y_floats * (end - begin));
                    pool2d_backward(s.pool, op.pooling, ys, pooled + s.pooled_offset,
                                    dpooled + s.pooled_offset, dys, argmax + s.pooled_offset);
                    if (op.activation != Activation::kIdentity) {
                      activation_backward(op.activation, end - begin, s.y_floats, nullptr, ys, dys, dys);
                    }
                    return dys;
                  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
