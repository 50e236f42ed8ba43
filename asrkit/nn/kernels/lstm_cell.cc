// The elementwise part of one LSTM cell step, forward and backward, each as one CPU kernel.
//
// TensorFlow runs the cell's gate nonlinearities and products as about 14 ops forward and 25
// backward, each a pass over [b, H] or [b, 4H] tensors in memory; at the paper's size (H = 768,
// b = 256) that traffic is much of what keeps the training step under the machine's GEMM rate.
// These kernels read each input once and write each output once, in row blocks shared out
// over the intra-op threads, with Eigen's vectorised logistic and tanh (the functions TensorFlow's
// own Sigmoid and Tanh kernels use).  Built and loaded by asrkit/nn/cpu_kernels.py, used by
// asrkit/nn/fused_lstm.py.
//
// Gate order is asrkit's: input, forget, candidate, output (asrkit/nn/lstm.py).  No cell clipping
// (a layer with cell_clip > 0 uses TensorFlow's ops).

#include "rows.h"

using namespace asrkit;  // NOLINT: the kernels' shared vocabulary (rows.h)

namespace {

// Gate k (of `gates` gates of width h) of row `row` of a row-major [b, gates * h] buffer: contiguous,
// so every expression below runs on whole SIMD packets (each row's keep is a scalar).
ConstVector Gate(const float* base, int64 row, int64 h, int gates, int k) {
  return ConstVector(base + (row * gates + k) * h, h);
}
Vector Gate(float* base, int64 row, int64 h, int gates, int k) { return Vector(base + (row * gates + k) * h, h); }

// The cost per row given to ForRows is 8H cycles (about 4H vectorised nonlinearities and products):
// batches below about 100,000 cycles of work stay on one thread, since the step's other ops (the other
// layer's or direction's steps) usually keep the other core busy.  Measured with bench/train.py's steps
// against H and 16H.

}  // namespace

REGISTER_OP("AsrkitLstmCell")
    .Input("projected: float")
    .Input("recurrent: float")
    .Input("cell_prev: float")
    .Input("keep: float")
    .Output("cell: float")
    .Output("output: float")
    .Output("activations: float")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(2));
      c->set_output(1, c->input(2));
      c->set_output(2, c->input(0));
      return tensorflow::OkStatus();
    })
    .Doc("One LSTM cell step: pre-activations projected + keep * recurrent [b, 4H] (recurrent is the "
         "previous output times the recurrent kernel), previous cell [b, H] times keep [b] (0 where an "
         "utterance starts, which zeroes the state): the new cell, the output, and the gate activations "
         "(for the gradient).");

REGISTER_OP("AsrkitLstmCellGrad")
    .Input("cell_prev: float")
    .Input("keep: float")
    .Input("cell: float")
    .Input("activations: float")
    .Input("output_grad: float")
    .Input("recurrent_grad: float")
    .Input("keep_next: float")
    .Input("cell_grad: float")
    .Output("preactivation_grad: float")
    .Output("cell_prev_grad: float")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(3));
      c->set_output(1, c->input(0));
      return tensorflow::OkStatus();
    })
    .Doc("The gradient of AsrkitLstmCell with respect to its pre-activations [b, 4H] and its cell_prev "
         "[b, H], from the gradients of its output (output_grad + keep_next * recurrent_grad, the latter "
         "being the next step's pre-activation gradient times the recurrent kernel's transpose) and of "
         "its cell.");

class LstmCellOp : public OpKernel {
 public:
  explicit LstmCellOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& projected = context->input(0);
    const Tensor& recurrent = context->input(1);
    const Tensor& cell_prev = context->input(2);
    const Tensor& keep = context->input(3);
    OP_REQUIRES(context, cell_prev.dims() == 2,
                tensorflow::errors::InvalidArgument("cell_prev must be [b, H], not ", cell_prev.shape().DebugString()));
    const int64 rows = cell_prev.dim_size(0), h = cell_prev.dim_size(1);
    OP_REQUIRES_OK(context, CheckShape(projected, rows, 4 * h, "projected"));
    OP_REQUIRES_OK(context, CheckShape(recurrent, rows, 4 * h, "recurrent"));
    OP_REQUIRES_OK(context, CheckVector(keep, rows, "keep"));
    Tensor *cell = nullptr, *output = nullptr, *activations = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, cell_prev.shape(), &cell));
    OP_REQUIRES_OK(context, context->allocate_output(1, cell_prev.shape(), &output));
    OP_REQUIRES_OK(context, context->allocate_output(2, projected.shape(), &activations));
    const float* p = projected.flat<float>().data();
    const float* r = recurrent.flat<float>().data();
    const float* cp = cell_prev.flat<float>().data();
    const float* k = keep.flat<float>().data();
    float* c = cell->flat<float>().data();
    float* o = output->flat<float>().data();
    float* a = activations->flat<float>().data();
    ForRows(context, rows, /*cost_per_row=*/8 * h, [&](int64 start, int64 end) {
      for (int64 row = start; row < end; ++row) {
        const float keep_row = k[row];
        for (int g = 0; g < 4; ++g) {
          if (g == 2) {
            Gate(a, row, h, 4, g) = (Gate(p, row, h, 4, g) + keep_row * Gate(r, row, h, 4, g)).tanh();
          } else {
            Gate(a, row, h, 4, g) = (Gate(p, row, h, 4, g) + keep_row * Gate(r, row, h, 4, g)).logistic();
          }
        }
        const float* act = a;
        Vector new_cell = Gate(c, row, h, 1, 0);
        new_cell = Gate(act, row, h, 4, 1) * (keep_row * Gate(cp, row, h, 1, 0)) +
                   Gate(act, row, h, 4, 0) * Gate(act, row, h, 4, 2);
        Gate(o, row, h, 1, 0) = Gate(act, row, h, 4, 3) * new_cell.tanh();
      }
    });
  }
};

class LstmCellGradOp : public OpKernel {
 public:
  explicit LstmCellGradOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& cell_prev = context->input(0);
    OP_REQUIRES(context, cell_prev.dims() == 2,
                tensorflow::errors::InvalidArgument("cell_prev must be [b, H], not ", cell_prev.shape().DebugString()));
    const int64 rows = cell_prev.dim_size(0), h = cell_prev.dim_size(1);
    const Tensor& keep = context->input(1);
    const Tensor& cell = context->input(2);
    const Tensor& activations = context->input(3);
    const Tensor& output_grad = context->input(4);
    const Tensor& recurrent_grad = context->input(5);
    const Tensor& keep_next = context->input(6);
    const Tensor& cell_grad = context->input(7);
    OP_REQUIRES_OK(context, CheckVector(keep, rows, "keep"));
    OP_REQUIRES_OK(context, CheckShape(cell, rows, h, "cell"));
    OP_REQUIRES_OK(context, CheckShape(activations, rows, 4 * h, "activations"));
    OP_REQUIRES_OK(context, CheckShape(output_grad, rows, h, "output_grad"));
    OP_REQUIRES_OK(context, CheckShape(recurrent_grad, rows, h, "recurrent_grad"));
    OP_REQUIRES_OK(context, CheckVector(keep_next, rows, "keep_next"));
    OP_REQUIRES_OK(context, CheckShape(cell_grad, rows, h, "cell_grad"));
    Tensor *preactivation_grad = nullptr, *cell_prev_grad = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, activations.shape(), &preactivation_grad));
    OP_REQUIRES_OK(context, context->allocate_output(1, cell_prev.shape(), &cell_prev_grad));
    const float* cp = cell_prev.flat<float>().data();
    const float* k = keep.flat<float>().data();
    const float* c = cell.flat<float>().data();
    const float* a = activations.flat<float>().data();
    const float* dh = output_grad.flat<float>().data();
    const float* dr = recurrent_grad.flat<float>().data();
    const float* kn = keep_next.flat<float>().data();
    const float* dc = cell_grad.flat<float>().data();
    float* dz = preactivation_grad->flat<float>().data();
    float* dcp = cell_prev_grad->flat<float>().data();
    ForRows(context, rows, /*cost_per_row=*/8 * h, [&](int64 start, int64 end) {
      Buffer d_output(h), squashed(h), d_cell(h);
      for (int64 row = start; row < end; ++row) {
        const ConstVector input = Gate(a, row, h, 4, 0);
        const ConstVector forget = Gate(a, row, h, 4, 1);
        const ConstVector candidate = Gate(a, row, h, 4, 2);
        const ConstVector output_gate = Gate(a, row, h, 4, 3);
        // dL/dh: from above (this step's output) and through the next step's recurrent product.
        d_output = Gate(dh, row, h, 1, 0) + kn[row] * Gate(dr, row, h, 1, 0);
        // tanh(c) is recomputed rather than stored: one more tanh is cheaper than one more pass over memory.
        squashed = Gate(c, row, h, 1, 0).tanh();
        // dL/dc: from the next step's cell and through this step's output.
        d_cell = Gate(dc, row, h, 1, 0) + d_output * output_gate * (1.0f - squashed.square());
        Gate(dz, row, h, 4, 0) = d_cell * candidate * input * (1.0f - input);
        Gate(dz, row, h, 4, 1) = d_cell * (k[row] * Gate(cp, row, h, 1, 0)) * forget * (1.0f - forget);
        Gate(dz, row, h, 4, 2) = d_cell * input * (1.0f - candidate.square());
        Gate(dz, row, h, 4, 3) = d_output * squashed * output_gate * (1.0f - output_gate);
        Gate(dcp, row, h, 1, 0) = k[row] * d_cell * forget;
      }
    });
  }
};

REGISTER_KERNEL_BUILDER(Name("AsrkitLstmCell").Device(tensorflow::DEVICE_CPU), LstmCellOp);
REGISTER_KERNEL_BUILDER(Name("AsrkitLstmCellGrad").Device(tensorflow::DEVICE_CPU), LstmCellGradOp);
