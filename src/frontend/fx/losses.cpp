//===- fx/losses.cpp - Losses -----------------------------------------------===//
//
// nll_loss, mse_loss, binary_cross_entropy (and with logits), smooth_l1 and huber, with
// ATen's reduction enum (0 none, 1 mean, 2 sum).
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

/// nll_loss(self [N,C] or [C], target, weight?, reduction, ignore_index) -> (loss, total_weight)
V nllLoss(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  if (c.has(2, "weight")) c.fail("nll_loss with class weights is not supported yet");
  int64_t reduction = c.integer(3, "reduction", 1);
  int64_t ignore = c.integer(4, "ignore_index", -100);
  bool batched = c.type(x).rank() == 2;
  ValueId t2 = batched ? c.op(OpKind::Unsqueeze, {t}, Attrs{{"dim", int64_t{1}}}) : c.op(OpKind::View, {t}, Attrs{{"size", Ints{1}}});
  ValueId valid = bin(c, OpKind::Ne, {t2, c.scalar(static_cast<double>(ignore), DType::I64)});
  ValueId safe = c.op(OpKind::Where, {valid, t2, c.scalar(0, DType::I64)});
  ValueId picked = c.op(OpKind::Gather, {x, safe}, Attrs{{"dim", int64_t{batched ? 1 : 0}}});
  ValueId zero = sc(c, 0.0, x);
  ValueId per = c.op(OpKind::Where, {valid, c.op(OpKind::Neg, {picked}), zero});
  per = batched ? c.op(OpKind::Squeeze, {per}, Attrs{{"dim", Ints{1}}}) : c.op(OpKind::View, {per}, Attrs{{"size", Ints{}}});
  ValueId count = reduceOp(c, OpKind::Sum, c.op(OpKind::Cast, {valid}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}}), {}, false);
  if (reduction == 0) return {per, count};
  ValueId total = reduceOp(c, OpKind::Sum, per, {}, false);
  if (reduction == 2) return {total, count};
  return {bin(c, OpKind::Div, {total, count}), count};
}

/// Loss reductions: 0 none, 1 mean, 2 sum.
ValueId reduced(Converter& c, ValueId v, int64_t red) {
  if (red == 0) return v;
  if (red != 1 && red != 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum)");
  return reduceOp(c, red == 1 ? OpKind::Mean : OpKind::Sum, v, {}, false);
}

/// binary_cross_entropy_with_logits(x, t, weight?, pos_weight?, reduction),
/// ATen's formula: (1 - t) * x + (1 + (pw - 1) * t) * (log1p(exp(-|x|)) + max(-x, 0)).
V bceWithLogits(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  ValueId sp = bin(c, OpKind::Add, {c.op(OpKind::Log1p, {c.op(OpKind::Exp, {c.op(OpKind::Neg, {c.op(OpKind::Abs, {x})})})}),
                                    c.op(OpKind::Maximum, {c.op(OpKind::Neg, {x}), sc(c, 0.0, x)})});
  ValueId oneMinusT = bin(c, OpKind::Sub, {sc(c, 1.0, t), t});
  ValueId loss;
  if (c.has(3, "pos_weight")) {
    ValueId pw = c.tensor(3, "pos_weight");
    ValueId lw = bin(c, OpKind::Add, {sc(c, 1.0, t), bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {pw, sc(c, 1.0, pw)}), t})});
    loss = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {oneMinusT, x}), bin(c, OpKind::Mul, {lw, sp})});
  } else {
    loss = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {oneMinusT, x}), sp});
  }
  if (c.has(2, "weight")) loss = bin(c, OpKind::Mul, {loss, c.tensor(2, "weight")});
  return {reduced(c, loss, c.integer(4, "reduction", 1))};
}

/// smooth_l1 (beta) and huber (delta) losses.
V smoothL1(Converter& c, bool huber) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  double b = c.number(3, huber ? "delta" : "beta", 1.0);
  ValueId d = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {x, t})});
  ValueId sq = bin(c, OpKind::Mul, {bin(c, OpKind::Mul, {d, d}), sc(c, huber ? 0.5 : 0.5 / (b == 0 ? 1.0 : b), d)});
  ValueId lin = huber ? bin(c, OpKind::Mul, {bin(c, OpKind::Sub, {d, sc(c, 0.5 * b, d)}), sc(c, b, d)})
                      : bin(c, OpKind::Sub, {d, sc(c, 0.5 * b, d)});
  ValueId loss = (!huber && b == 0) ? d : c.op(OpKind::Where, {bin(c, OpKind::Lt, {d, sc(c, b, d)}), sq, lin});
  return {reduced(c, loss, c.integer(2, "reduction", 1))};
}

/// kl_div(self, target, reduction=Mean, log_target=False), ATen's formula
/// (Loss.cpp): exp(t) * (t - x) for a log target, else xlogy(t, t) - t * x;
/// F.kl_div's "batchmean" is reduction=Sum divided by the batch afterwards.
V klDiv(Converter& c) {
  ValueId x = c.tensor(0, "self"), t = c.tensor(1, "target");
  ValueId loss = c.boolean(3, "log_target", false)
                     ? bin(c, OpKind::Mul, {c.op(OpKind::Exp, {t}), bin(c, OpKind::Sub, {t, x})})
                     : bin(c, OpKind::Sub, {xlogy(c, t, t), bin(c, OpKind::Mul, {t, x})});
  return {reduced(c, loss, c.integer(2, "reduction", 1))};
}

}  // namespace

Entries lossesConverters() {
  return {
    {"aten.nll_loss_forward.default", nllLoss},
    {"aten.mse_loss.default",
     [](Converter& c) -> V {
       ValueId d = bin(c, OpKind::Sub, {c.tensor(0, "self"), c.tensor(1, "target")});
       ValueId sq = bin(c, OpKind::Mul, {d, d});
       int64_t red = c.integer(2, "reduction", 1);
       if (red == 0) return {sq};
       return {reduceOp(c, red == 1 ? OpKind::Mean : OpKind::Sum, sq, {}, false)};
     }},
    {"aten.binary_cross_entropy_with_logits.default", bceWithLogits},
    {"aten.binary_cross_entropy.default",
     [](Converter& c) -> V {
       ValueId w = c.has(2, "weight") ? c.tensor(2, "weight") : kNoValue;
       return {binaryCrossEntropy(c, c.tensor(0, "self"), c.tensor(1, "target"), w, c.integer(3, "reduction", 1))};
     }},
    {"aten.smooth_l1_loss.default", [](Converter& c) { return smoothL1(c, false); }},
    {"aten.huber_loss.default", [](Converter& c) { return smoothL1(c, true); }},
    {"aten.kl_div.default", klDiv},
  };
}

}  // namespace aotc::fx
