//===- fx/sampling.cpp - grid_sampler ---------------------------------------===//
//
// grid_sampler_2d (Note [grid_sampler]): a decomposition that reads its FX
// arguments as it goes; it stays in the front end until it is rewritten over
// the ops layer's builder.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

namespace {

// Note [grid_sampler]: ATen's grid_sampler_2d, op for op in the input's
// dtype: each grid coordinate is unnormalized (align_corners or not),
// clipped (border) or reflected (reflection) as grid_sampler_compute_source_index
// does, then bilinear takes the four neighbours (floor, +1) weighted by the
// opposite areas and nearest the neighbour at nearbyint; a neighbour outside
// the input reads 0.  Reads are one gather per neighbour from [N, C, H*W].
// The gradient with respect to the input flows through the gathers, with
// respect to the grid through the weights (floor and round have none, and
// clipping none outside the range), as in ATen's backward.
ValueId gridSourceIndex(Converter& c, ValueId coord, int64_t size, int64_t padding, bool align) {
  const double n = static_cast<double>(size);
  ValueId one = sc(c, 1.0, coord);
  ValueId x = align ? bin(c, OpKind::Mul, {bin(c, OpKind::Div, {bin(c, OpKind::Add, {coord, one}), sc(c, 2.0, coord)}), sc(c, n - 1, coord)})
                    : bin(c, OpKind::Div, {bin(c, OpKind::Sub, {bin(c, OpKind::Mul, {bin(c, OpKind::Add, {coord, one}), sc(c, n, coord)}), one}),
                                           sc(c, 2.0, coord)});
  if (padding == 1) return clampOp(c, x, 0.0, n - 1);
  if (padding == 2) {
    // reflect_coordinates(x, twice_low, twice_high), then clip.
    const double lo2 = align ? 0.0 : -1.0, hi2 = align ? 2.0 * (n - 1) : 2.0 * n - 1;
    if (lo2 == hi2) return sc(c, 0.0, coord);
    const double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    ValueId in = c.op(OpKind::Abs, {bin(c, OpKind::Sub, {x, sc(c, mn, x)})});
    ValueId extra = bin(c, OpKind::Fmod, {in, sc(c, span, in)});
    ValueId flips = c.op(OpKind::Floor, {bin(c, OpKind::Div, {in, sc(c, span, in)})});
    ValueId even = bin(c, OpKind::Eq, {bin(c, OpKind::Fmod, {flips, sc(c, 2.0, flips)}), sc(c, 0.0, flips)});
    ValueId up = bin(c, OpKind::Add, {extra, sc(c, mn, extra)});
    ValueId down = bin(c, OpKind::Add, {bin(c, OpKind::Sub, {sc(c, span, extra), extra}), sc(c, mn, extra)});
    return clampOp(c, c.op(OpKind::Where, {even, up, down}), 0.0, n - 1);
  }
  return x;
}

V gridSampler2d(Converter& c) {
  ValueId x = c.tensor(0, "input"), grid = c.tensor(1, "grid");
  int64_t interp = c.integer(2, "interpolation_mode", 0), padding = c.integer(3, "padding_mode", 0);
  bool align = c.boolean(4, "align_corners", false);
  if (interp == 2) c.fail("grid_sampler_2d: bicubic interpolation is not supported (bilinear and nearest are)");
  if (interp != 0 && interp != 1) c.fail(cat("grid_sampler_2d: unknown interpolation mode ", interp));
  if (padding < 0 || padding > 2) c.fail(cat("grid_sampler_2d: unknown padding mode ", padding));
  const TensorType t = c.type(x), gt = c.type(grid);
  if (t.rank() != 4 || gt.rank() != 4 || gt.sizes[3] != 2 || gt.sizes[0] != t.sizes[0])
    c.fail("grid_sampler_2d: input must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
  if (!isFloating(t.dtype) || gt.dtype != t.dtype) c.fail("grid_sampler_2d: input and grid must have the same floating dtype");
  const int64_t N = t.sizes[0], C = t.sizes[1], H = t.sizes[2], W = t.sizes[3], P = gt.sizes[1] * gt.sizes[2];
  ValueId flat = reshapeTo(c, x, {N, C, H * W});
  ValueId gx = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{0}}}), {N, 1, P});
  ValueId gy = reshapeTo(c, c.op(OpKind::Select, {grid}, Attrs{{"dim", int64_t{3}}, {"index", int64_t{1}}}), {N, 1, P});
  ValueId ix = gridSourceIndex(c, gx, W, padding, align);
  ValueId iy = gridSourceIndex(c, gy, H, padding, align);
  // One neighbour: x[n, c, y, x] where (y, x) is inside, else 0.
  auto tap = [&](ValueId fy, ValueId fx) {
    ValueId inX = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fx, sc(c, 0.0, fx)}), bin(c, OpKind::Le, {fx, sc(c, static_cast<double>(W - 1), fx)})});
    ValueId inY = bin(c, OpKind::LogicalAnd, {bin(c, OpKind::Ge, {fy, sc(c, 0.0, fy)}), bin(c, OpKind::Le, {fy, sc(c, static_cast<double>(H - 1), fy)})});
    ValueId inside = bin(c, OpKind::LogicalAnd, {inX, inY});
    ValueId lin = bin(c, OpKind::Add, {bin(c, OpKind::Mul, {fy, sc(c, static_cast<double>(W), fy)}), fx});
    ValueId safe = c.op(OpKind::Where, {inside, lin, sc(c, 0.0, lin)});
    ValueId idx = c.op(OpKind::Cast, {safe}, Attrs{{"dtype", std::string("i64")}});
    ValueId full = c.op(OpKind::Clone, {c.op(OpKind::Expand, {idx}, Attrs{{"size", Ints{N, C, P}}})});
    ValueId v = c.op(OpKind::Gather, {flat, full}, Attrs{{"dim", int64_t{2}}});
    return c.op(OpKind::Where, {inside, v, sc(c, 0.0, v)});
  };
  ValueId out;
  if (interp == 1) {
    ValueId rx = c.op(OpKind::Round, {ix});
    ValueId ry = c.op(OpKind::Round, {iy});
    out = tap(ry, rx);
  } else {
    ValueId x0 = c.op(OpKind::Floor, {ix});
    ValueId y0 = c.op(OpKind::Floor, {iy});
    ValueId x1 = bin(c, OpKind::Add, {x0, sc(c, 1.0, x0)});
    ValueId y1 = bin(c, OpKind::Add, {y0, sc(c, 1.0, y0)});
    ValueId wx1 = bin(c, OpKind::Sub, {ix, x0}), wx0 = bin(c, OpKind::Sub, {x1, ix});
    ValueId wy1 = bin(c, OpKind::Sub, {iy, y0}), wy0 = bin(c, OpKind::Sub, {y1, iy});
    ValueId nw = bin(c, OpKind::Mul, {tap(y0, x0), bin(c, OpKind::Mul, {wx0, wy0})});
    ValueId ne = bin(c, OpKind::Mul, {tap(y0, x1), bin(c, OpKind::Mul, {wx1, wy0})});
    ValueId sw = bin(c, OpKind::Mul, {tap(y1, x0), bin(c, OpKind::Mul, {wx0, wy1})});
    ValueId se = bin(c, OpKind::Mul, {tap(y1, x1), bin(c, OpKind::Mul, {wx1, wy1})});
    out = bin(c, OpKind::Add, {bin(c, OpKind::Add, {bin(c, OpKind::Add, {nw, ne}), sw}), se});
  }
  return {reshapeTo(c, out, {N, C, gt.sizes[1], gt.sizes[2]})};
}

}  // namespace

Entries samplingConverters() {
  return {
    {"aten.grid_sampler_2d.default", gridSampler2d},
    {"aten.grid_sampler.default", gridSampler2d},
  };
}

}  // namespace aotc::fx
