// What asrkit's CPU kernels share: row-major float tensors worked on a row at a time, rows shared
// out over TensorFlow's intra-op threads, and shape checks that name the input.  Included by the
// kernels in this directory (asrkit/nn/cpu_kernels.py keys its build cache on this file too).

#ifndef ASRKIT_NN_KERNELS_ROWS_H_
#define ASRKIT_NN_KERNELS_ROWS_H_

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/util/work_sharder.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace asrkit {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::int64;
using tensorflow::shape_inference::InferenceContext;

// Contiguous runs of floats as Eigen arrays, so that expressions over them run on whole SIMD packets.
using Vector = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>>;
using ConstVector = Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, 1>>;
using Buffer = Eigen::Array<float, Eigen::Dynamic, 1>;

// work(start, end) over row ranges shared out over the intra-op threads; TensorFlow's cost model
// keeps work below about 100,000 cycles (rows x cost_per_row) on one thread.
template <typename Work>
void ForRows(OpKernelContext* context, int64 rows, int64 cost_per_row, Work work) {
  auto* workers = context->device()->tensorflow_cpu_worker_threads();
  tensorflow::Shard(workers->num_threads, workers->workers, rows, cost_per_row, work);
}

inline tensorflow::Status CheckShape(const Tensor& tensor, int64 rows, int64 columns, const char* name) {
  if (tensor.dims() == 2 && tensor.dim_size(0) == rows && tensor.dim_size(1) == columns) {
    return tensorflow::OkStatus();
  }
  return tensorflow::errors::InvalidArgument(name, " must be [", rows, ", ", columns, "], not ",
                                             tensor.shape().DebugString());
}

inline tensorflow::Status CheckVector(const Tensor& tensor, int64 rows, const char* name) {
  if (tensor.dims() == 1 && tensor.dim_size(0) == rows) {
    return tensorflow::OkStatus();
  }
  return tensorflow::errors::InvalidArgument(name, " must be [", rows, "], not ", tensor.shape().DebugString());
}

}  // namespace asrkit

#endif  // ASRKIT_NN_KERNELS_ROWS_H_
