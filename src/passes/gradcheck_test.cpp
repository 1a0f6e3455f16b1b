//===- gradcheck_test.cpp - Every gradient rule vs finite differences -----===//
//
// For every op row marked Diff: build `loss = sum_k sum(out_k * W_k)` around
// one node with float64 inputs, differentiate it with autodiff, evaluate the
// joint graph on the reference runtime, and compare each input's gradient
// with central differences of the loss.  A Diff row without a sample here
// fails the completeness test.
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "aotc/text/text.h"
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"
#include "aotc/runtime/reference_runtime.h"
#include "ops/op_samples.h"

namespace aotc {
namespace {

TEST(GradCheck, EveryDifferentiableRowHasASample) {
  std::set<OpKind> have;
  for (auto& s : samples()) have.insert(s.op);
  for (int i = 0; i < kNumOps; ++i) {
    OpKind k = static_cast<OpKind>(i);
    // Markers whose gradient is tested through the conformance suite.
    if (k == OpKind::KeepGrad || k == OpKind::CustomGrad) continue;
    if (opInfo(k).grad == GradKind::Diff) {
      EXPECT_TRUE(have.count(k)) << opName(k) << " has a gradient rule but no finite-difference sample";
    }
  }
}

class GradCheck : public ::testing::TestWithParam<Sample> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const Sample& s = GetParam();
  Graph g = buildLoss(s);
  Graph joint = autodiff(g);
  verifyGraph(joint);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(s.lo, s.hi);
  std::vector<HostTensor> inputs;
  for (const GraphInput& gi : g.inputs) {
    const TensorType& t = g.type(gi.value);
    HostTensor h = HostTensor::zeros(t.dtype, t.sizes);
    const std::string& n = g.values[gi.value].name;
    if (n[0] == 'x' && !s.inputs[std::stoul(n.substr(1))].fixed.empty()) {
      h.data = s.inputs[std::stoul(n.substr(1))].fixed;
    } else {
      for (double& x : h.data) {
        x = n[0] == 'w' ? std::uniform_real_distribution<double>(-1, 1)(rng) : u(rng);
        if (s.awayFromZero && std::abs(x) < 0.3) x = x < 0 ? x - 0.3 : x + 0.3;
      }
    }
    inputs.push_back(std::move(h));
  }
  auto noEpilogue = [](const std::string&, const HostTensor&) {};
  auto lossAt = [&](const std::vector<HostTensor>& in) { return interpretGraph(g, in, noEpilogue)[0].data[0]; };
  std::vector<HostTensor> jin = inputs;
  jin.push_back(HostTensor{DType::F64, {}, {1.0}});  // the tangent of the loss
  std::vector<HostTensor> jout = interpretGraph(joint, jin, noEpilogue);
  const double eps = 1e-6;
  size_t gi = 1;  // joint outputs: the loss, then one grad per requires-grad input
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (!g.inputs[i].requires_grad) continue;
    const HostTensor& analytic = jout.at(gi++);
    ASSERT_EQ(analytic.data.size(), inputs[i].data.size()) << opName(s.op);
    for (size_t e = 0; e < inputs[i].data.size(); ++e) {
      std::vector<HostTensor> plus = inputs, minus = inputs;
      plus[i].data[e] += eps;
      minus[i].data[e] -= eps;
      double numeric = (lossAt(plus) - lossAt(minus)) / (2 * eps);
      EXPECT_NEAR(analytic.data[e], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << opName(s.op) << ": d loss / d input " << i << " element " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, ::testing::ValuesIn(samples()),
                         [](const auto& info) { return std::string(opName(info.param.op)) + "_" + std::to_string(info.index); });

}  // namespace
}  // namespace aotc
