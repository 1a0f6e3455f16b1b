//===- onnx/training.cpp - Training ops -------------------------------------===//
//
// ai.onnx.preview.training's optimizers: Adagrad, Momentum, Adam.
//
// Note [ONNX converter tables] (node.h) says how to add an op.
//===----------------------------------------------------------------------===//
#include "node.h"

namespace aotc::onnx_fe {

namespace {

/// ai.onnx.preview.training's optimizers (Adagrad, Momentum, Adam): one
/// update of every (X, G, state...) group, as ONNX's reference writes it.
/// Inputs: R (learning rate), T (update count), then the groups by kind.
template <int Kind>  // 0 Adagrad, 1 Momentum, 2 Adam
Outs optimizerOp(Node& c) {
  size_t states = Kind == 2 ? 2 : 1;
  size_t per = 2 + states;
  if (c.numInputs() < 2 + per || (c.numInputs() - 2) % per) c.fail("the inputs must be R, T and groups of X, G and the optimizer's state");
  size_t n = (c.numInputs() - 2) / per;
  Outs outs(n * (1 + states));
  for (size_t k = 0; k < n; ++k) {
    ValueId X = c.in(2 + k), G = c.in(2 + n + k);
    DType d = c.type(X).dtype;
    ValueId R = c.cast(c.in(0), d), T = c.cast(c.in(1), d);
    ValueId Greg = c.add(c.scaled(X, c.f("norm_coefficient", 0.0)), G);
    if (Kind == 0) {
      ValueId H = c.in(2 + 2 * n + k);
      ValueId one = sc(c, 1.0, T);
      ValueId r = c.div(R, c.add(one, c.scaled(T, c.f("decay_factor", 0.0))));
      ValueId Hn = c.add(H, c.mul(Greg, Greg));
      ValueId root = c.op(OpKind::Sqrt, {Hn});
      ValueId Ha = c.add(root, sc(c, c.f("epsilon", 0.0), Hn));
      outs[k] = c.sub(X, c.mul(r, c.div(Greg, Ha)));
      outs[n + k] = Hn;
    } else if (Kind == 1) {
      ValueId V = c.in(2 + 2 * n + k);
      double alpha = c.f("alpha", 0), beta = c.f("beta", 0);
      ValueId first = bin(c, OpKind::Eq, {T, sc(c, 0.0, T)});
      ValueId betaAdj = c.op(OpKind::Where, {first, sc(c, 1.0, T), sc(c, beta, T)});
      ValueId decayed = c.scaled(V, alpha);
      ValueId Vn = c.add(decayed, c.mul(betaAdj, Greg));
      std::string mode = c.s("mode", "standard");
      if (mode == "standard") outs[k] = c.sub(X, c.mul(R, Vn));
      else if (mode == "nesterov") outs[k] = c.sub(X, c.mul(R, c.add(Greg, c.scaled(Vn, alpha))));
      else c.fail("Momentum: mode '" + mode + "' is not supported");
      outs[n + k] = Vn;
    } else {
      ValueId V = c.in(2 + 2 * n + k), H = c.in(2 + 3 * n + k);
      double alpha = c.f("alpha", 0.9), beta = c.f("beta", 0.999), eps = c.f("epsilon", 1e-6);
      ValueId vOld = c.scaled(V, alpha);
      ValueId Vn = c.add(vOld, c.scaled(Greg, 1 - alpha));
      ValueId hOld = c.scaled(H, beta);
      ValueId Hn = c.add(hOld, c.scaled(c.mul(Greg, Greg), 1 - beta));
      ValueId root = c.op(OpKind::Sqrt, {Hn});
      ValueId Hs = c.add(root, sc(c, eps, Hn));
      ValueId powA = c.op(OpKind::Pow, {sc(c, alpha, T), T});
      ValueId powB = c.op(OpKind::Pow, {sc(c, beta, T), T});
      ValueId num = c.mul(R, c.op(OpKind::Sqrt, {c.sub(sc(c, 1.0, T), powB)}));
      ValueId adj = c.div(num, c.sub(sc(c, 1.0, T), powA));
      ValueId positive = bin(c, OpKind::Gt, {T, sc(c, 0.0, T)});
      ValueId Radj = c.op(OpKind::Where, {positive, adj, R});
      ValueId Xn = c.sub(X, c.mul(Radj, c.div(Vn, Hs)));
      outs[k] = c.scaled(Xn, 1 - c.f("norm_coefficient_post", 0.0));
      outs[n + k] = Vn;
      outs[2 * n + k] = Hn;
    }
  }
  return outs;
}

}  // namespace

Entries trainingConverters() {
  return {
    {"Adagrad", optimizerOp<0>},
    {"Adam", optimizerOp<2>},
    {"Momentum", optimizerOp<1>},
  };
}

}  // namespace aotc::onnx_fe
