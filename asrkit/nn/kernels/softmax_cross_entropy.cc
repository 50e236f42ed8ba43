// Frame cross-entropy over the softmax layer's logits, its gradient and frame accuracy, in one pass.
//
// At the recipe's size ([5120, 2000] logits a step) TensorFlow's ops for the loss, its gradient and the
// accuracy are six or seven passes over the logits in memory (softmax, the gathers, the gradient's
// scale and one-hot subtraction, the row maxima): 7% of the LSTM's training step.  Here each row of
// logits is read once into cache and its gradient written once, in place of the logits where
// TensorFlow lets the buffer go (the step's logits have no other use): the gradient of a frame's loss
// with respect to its logits is softmax - one-hot, and the backward pass scales each row by the
// upstream gradient of its frame (AsrkitScaleRows, in place too).  The loss is
// log-sum-exp - logit(label), exact where softmax(label) underflows.  Built and loaded by
// asrkit/nn/cpu_kernels.py; used by asrkit/train/cross_entropy.py.

#include <cmath>

#include "rows.h"

using namespace asrkit;  // NOLINT: the kernels' shared vocabulary (rows.h)

REGISTER_OP("AsrkitSoftmaxCrossEntropy")
    .Input("logits: float")
    .Input("labels: int32")
    .Output("losses: float")
    .Output("correct: float")
    .Output("gradient: float")
    .SetShapeFn([](InferenceContext* c) {
      tensorflow::shape_inference::ShapeHandle logits;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 2, &logits));
      c->set_output(0, c->Vector(c->Dim(logits, 0)));
      c->set_output(1, c->Vector(c->Dim(logits, 0)));
      c->set_output(2, logits);
      return tensorflow::OkStatus();
    })
    .Doc("Per frame (row) of logits [n, k] with its label in [0, k): the loss -log softmax(logits)[label], "
         "1.0 where the label's logit is the row's highest (a tie counts) else 0.0, and the loss's gradient "
         "with respect to the logits, softmax - one-hot [n, k] (written over the logits where their buffer "
         "has no other user).");

REGISTER_OP("AsrkitScaleRows")
    .Input("values: float")
    .Input("scales: float")
    .Output("scaled: float")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(0));
      return tensorflow::OkStatus();
    })
    .Doc("values [n, k] with row i times scales[i] (in place where the buffer has no other user).");

class SoftmaxCrossEntropyOp : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& logits = context->input(0);
    const Tensor& labels = context->input(1);
    OP_REQUIRES(context, logits.dims() == 2,
                tensorflow::errors::InvalidArgument("logits must be [frames, pdfs], not ",
                                                    logits.shape().DebugString()));
    const int64 rows = logits.dim_size(0), columns = logits.dim_size(1);
    OP_REQUIRES_OK(context, CheckVector(labels, rows, "labels"));
    OP_REQUIRES(context, columns > 0 || rows == 0,
                tensorflow::errors::InvalidArgument("logits have no pdfs: ", logits.shape().DebugString()));
    const int32_t* label = labels.flat<int32_t>().data();
    for (int64 row = 0; row < rows; ++row) {  // checked before anything is written over the logits
      OP_REQUIRES(context, label[row] >= 0 && label[row] < columns,
                  tensorflow::errors::InvalidArgument("label ", label[row], " of frame ", row,
                                                      " is outside [0, ", columns, ")"));
    }
    Tensor *losses = nullptr, *correct = nullptr, *gradient = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, labels.shape(), &losses));
    OP_REQUIRES_OK(context, context->allocate_output(1, labels.shape(), &correct));
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output({0}, 2, logits.shape(), &gradient));
    const float* in = logits.flat<float>().data();
    float* out = gradient->flat<float>().data();  // may be `in`: each row is read before it is written
    float* loss = losses->flat<float>().data();
    float* hit = correct->flat<float>().data();
    ForRows(context, rows, /*cost_per_row=*/8 * columns,  // a vectorised exp, max, sum and scale a logit
            [&](int64 start, int64 end) {
      for (int64 row = start; row < end; ++row) {
        const ConstVector z(in + row * columns, columns);
        const float best = z.maxCoeff();
        const float picked = z(label[row]);
        Vector g(out + row * columns, columns);
        g = (z - best).exp();
        const float total = g.sum();
        g *= 1.0f / total;
        g(label[row]) -= 1.0f;
        loss[row] = std::log(total) - (picked - best);
        hit[row] = picked >= best ? 1.0f : 0.0f;
      }
    });
  }
};

class ScaleRowsOp : public OpKernel {
 public:
  explicit ScaleRowsOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& values = context->input(0);
    const Tensor& scales = context->input(1);
    OP_REQUIRES(context, values.dims() == 2,
                tensorflow::errors::InvalidArgument("values must be [n, k], not ", values.shape().DebugString()));
    const int64 rows = values.dim_size(0), columns = values.dim_size(1);
    OP_REQUIRES_OK(context, CheckVector(scales, rows, "scales"));
    Tensor* scaled = nullptr;
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output({0}, 0, values.shape(), &scaled));
    const float* in = values.flat<float>().data();
    const float* scale = scales.flat<float>().data();
    float* out = scaled->flat<float>().data();
    ForRows(context, rows, /*cost_per_row=*/2 * columns, [&](int64 start, int64 end) {
      for (int64 row = start; row < end; ++row) {
        Vector(out + row * columns, columns) = ConstVector(in + row * columns, columns) * scale[row];
      }
    });
  }
};

REGISTER_KERNEL_BUILDER(Name("AsrkitSoftmaxCrossEntropy").Device(tensorflow::DEVICE_CPU), SoftmaxCrossEntropyOp);
REGISTER_KERNEL_BUILDER(Name("AsrkitScaleRows").Device(tensorflow::DEVICE_CPU), ScaleRowsOp);
