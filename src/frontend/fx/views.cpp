//===- fx/views.cpp - Shape ops and views -----------------------------------===//
//
// view/reshape/expand/permute/transpose/squeeze/slice/select and their in-place
// forms, cat/stack/split, as_strided (Note [as_strided as a gather]), unfold,
// pixel_shuffle, the *_scatter view writes, copy and resize_.
//
// Note [FX converter tables] (converter.h) says how to add a spelling.
//===----------------------------------------------------------------------===//
#include "converter.h"

namespace aotc::fx {

V reshape(Converter& c) {
  ValueId x = c.tensor(0, "self");
  Ints size = inferViewSize(c.ints(1, "shape"), c.type(x).numel());
  if (!viewStrides(c.type(x).sizes, c.type(x).strides, size)) x = c.op(OpKind::Clone, {x});
  return {c.op(OpKind::View, {x}, Attrs{{"size", size}})};
}

V transpose(Converter& c, OpKind k) {
  return {c.op(k, {c.tensor(0, "self")}, Attrs{{"dim0", c.integer(1, "dim0")},
                                                {"dim1", c.integer(2, "dim1")}})};
}

namespace {

V split(Converter& c) {
  ValueId x = c.tensor(0, "self");
  int64_t dim = dimArg(c, 2, "dim", x);
  int64_t size = c.type(x).sizes[static_cast<size_t>(dim)];
  int64_t chunk = c.integer(1, "split_size");
  if (chunk <= 0) c.fail("split size must be positive");
  Ints sizes;
  for (int64_t at = 0; at < size; at += chunk) sizes.push_back(std::min(chunk, size - at));
  if (sizes.empty()) sizes.push_back(0);
  return splitSizes(c, x, dim, sizes);
}

V catOp(Converter& c) {
  const json* list = c.arg(0, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("cat expects a non-empty list of tensors");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.ref((*list)[i], i));
  int64_t dim = c.integer(1, "dim", 0);
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", dim}})};
}

}  // namespace

V stack(Converter& c) {
  const json* list = c.arg(0, "tensors");
  if (!list || !list->is_array() || list->empty()) c.fail("stack expects a non-empty list of tensors");
  int64_t dim = c.integer(1, "dim", 0);
  std::vector<ValueId> xs;
  for (size_t i = 0; i < list->size(); ++i) xs.push_back(c.op(OpKind::Unsqueeze, {c.ref((*list)[i], i)}, Attrs{{"dim", dim}}));
  return {c.op(OpKind::Cat, xs, Attrs{{"dim", dim}})};
}

/// as_strided(self, size, stride, offset?) when it changes nothing but the
/// strides of size-1 dims (a memory-format adjustment, as ATen's reductions
/// emit): every element keeps its place, so it is the value itself.  General
/// as_strided reinterprets storage, which the IR's value semantics cannot
/// express: refused.
/// The value whose storage `v` shares: up through views, aliases and
/// in-place ops (before functionalization an in-place result is its self).
ValueId storageRoot(const Graph& g, ValueId v) {
  for (;;) {
    int32_t n = g.values[static_cast<size_t>(v)].node;
    if (n < 0) return v;
    const Node& nd = g.nodes[static_cast<size_t>(n)];
    OpCategory k = opInfo(nd.op).category;
    if (nd.inputs.empty() ||
        (k != OpCategory::View && k != OpCategory::Alias && k != OpCategory::Mutation && k != OpCategory::MetaMutation))
      return v;
    v = nd.inputs[0];
  }
}

namespace {

// Note [as_strided as a gather]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// as_strided that only restrides size-1 dims is the tensor itself.  One that
// moves elements (stft's and unfold's overlapping frames) reads storage
// offset + sum_d i_d * stride_d; when the source is contiguous in the IR and
// in the graph's recorded layout, storage index j is the source's element
// j - offset(source), so the result is index_select of the flattened source
// at a computed index, provided every index falls inside the source (else
// the read reaches storage aotc cannot see, and is refused).  The result is
// a copy where eager has a view, which differs only when the storage or the
// result is written afterwards: convertBody refuses any later data mutation
// of the source's storage or of the result (snapshot roots).
V asStrided(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const TensorType t = c.type(x);
  Ints size = c.ints(1, "size"), stride = c.ints(2, "stride");
  int64_t offset = c.has(3, "storage_offset") ? c.integer(3, "storage_offset") : t.offset;
  bool same = size == t.sizes && stride.size() == t.strides.size() && offset == t.offset;
  for (size_t d = 0; same && d < size.size(); ++d) same = size[d] == 1 || stride[d] == t.strides[d];
  if (same) return {x};
  if (size.size() != stride.size()) c.fail("as_strided: size and stride have different lengths");
  if (c.node().at("target") == "aten.as_strided_.default")
    c.fail("as_strided_ that moves elements is not supported (it changes the tensor's own layout)");
  const char* why = nullptr;
  if (t.strides != TensorType::contiguous(t.dtype, t.sizes).strides) why = "its source is not contiguous";
  if (c.recordedLayout(x)) why = "its source's recorded layout is not the IR's";
  int64_t hi = offset, numel = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) c.fail("as_strided: negative size or stride");
    numel = mulSize(numel, size[d]);
    if (size[d] > 0) hi = addSize(hi, mulSize(size[d] - 1, stride[d]));
  }
  if (numel > 0 && (offset < t.offset || hi >= t.offset + t.numel())) why = "it reads storage outside its source";
  if (why)
    c.fail(cat("as_strided that moves elements is supported as a gather from a contiguous source; here ", why));
  if (numel == 0) return {constantLike(c, 0.0, TensorType::contiguous(t.dtype, size))};
  // index = (offset - offset(source)) + sum_d iota(size_d) * stride_d, broadcast.
  const int64_t r = static_cast<int64_t>(size.size());
  ValueId idx = c.scalar(static_cast<double>(offset - t.offset), DType::I64);
  for (int64_t d = 0; d < r; ++d) {
    Ints shape(static_cast<size_t>(r), 1);
    shape[static_cast<size_t>(d)] = size[static_cast<size_t>(d)];
    idx = c.add(idx, c.scaled(c.reshape(iota(c, size[static_cast<size_t>(d)]), shape), static_cast<double>(stride[static_cast<size_t>(d)])));
  }
  ValueId flat = c.reshape(x, {t.numel()});
  ValueId y = c.reshape(c.op(OpKind::IndexSelect, {flat, c.reshape(idx, {numel})}, Attrs{{"dim", int64_t{0}}}), size);
  c.markSnapshot(storageRoot(c.graph(), x));
  c.markSnapshot(y);
  return {y};
}

/// unfold(dim, size, step): windows w of `size` elements at w * step along
/// `dim`, as a new last dim.  A view in eager: a gather here, guarded as
/// as_strided's (Note [as_strided as a gather]).
V unfoldOp(Converter& c) {
  ValueId x = c.tensor(0, "self");
  const TensorType t = c.type(x);
  const int64_t r = t.rank();
  int64_t dim = wrapDim(c.integer(1, "dimension"), std::max<int64_t>(r, 1));
  int64_t size = c.integer(2, "size"), step = c.integer(3, "step");
  int64_t len = r == 0 ? 1 : t.sizes[static_cast<size_t>(dim)];
  if (size < 0 || size > len) c.fail(cat("unfold: size ", size, " exceeds the dim's ", len));
  if (step <= 0) c.fail(cat("unfold: step must be positive, got ", step));
  if (r == 0) return {c.reshape(x, {size})};
  const int64_t windows = (len - size) / step + 1;
  ValueId g = c.op(OpKind::IndexSelect, {x, c.reshape(frameIndex(c, windows, size, step), {windows * size})}, Attrs{{"dim", dim}});
  Ints shape = t.sizes;
  shape[static_cast<size_t>(dim)] = windows;
  shape.insert(shape.begin() + dim + 1, size);
  ValueId y = c.reshape(g, shape);
  if (dim + 1 != r) {
    Ints perm;
    for (int64_t d = 0; d <= r; ++d)
      if (d != dim + 1) perm.push_back(d);
    perm.push_back(dim + 1);
    y = c.op(OpKind::Permute, {y}, Attrs{{"dims", perm}});
  }
  c.markSnapshot(storageRoot(c.graph(), x));
  c.markSnapshot(storageRoot(c.graph(), y));
  return {y};
}

/// pixel_shuffle(x, r): (N, C*r*r, H, W) -> (N, C, H*r, W*r).
ValueId pixelShuffle(Converter& c, ValueId x, int64_t r, bool inverse) {
  const TensorType t = c.type(x);
  if (t.rank() < 3 || r <= 0 || r > (int64_t{1} << 20)) c.fail("pixel_shuffle expects an input of at least 3 dims and a factor in [1, 2^20]");
  Ints lead(t.sizes.begin(), t.sizes.end() - 3);
  int64_t C = t.sizes[t.sizes.size() - 3], H = t.sizes[t.sizes.size() - 2], W = t.sizes.back();
  int64_t L = static_cast<int64_t>(lead.size());
  auto with = [&](Ints tail) { Ints s = lead; s.insert(s.end(), tail.begin(), tail.end()); return s; };
  Ints perm;
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
  if (!inverse) {
    if (C % (r * r)) c.fail("pixel_shuffle: channels must be divisible by the factor squared");
    ValueId v = reshapeTo(c, x, with({C / (r * r), r, r, H, W}));
    for (int64_t p : {0, 3, 1, 4, 2}) perm.push_back(L + p);
    ValueId p = c.op(OpKind::Permute, {v}, Attrs{{"dims", perm}});
    return reshapeTo(c, p, with({C / (r * r), mulSize(H, r), mulSize(W, r)}));
  }
  if (H % r || W % r) c.fail("pixel_unshuffle: height and width must be divisible by the factor");
  ValueId v = reshapeTo(c, x, with({C, H / r, r, W / r, r}));
  for (int64_t p : {0, 2, 4, 1, 3}) perm.push_back(L + p);
  ValueId p = c.op(OpKind::Permute, {v}, Attrs{{"dims", perm}});
  return reshapeTo(c, p, with({mulSize(C, r * r), H / r, W / r}));
}

}  // namespace

Entries viewsConverters() {
  return {
    {"aten.t.default", [](Converter& c) { return unary(c, OpKind::T); }},
    {"aten.view.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {c.op(OpKind::View, {x}, Attrs{{"size", inferViewSize(c.ints(1, "size"), c.type(x).numel())}})};
     }},
    {"aten._unsafe_view.default", reshape},
    {"aten.reshape.default", reshape},
    {"aten.expand.default",
     [](Converter& c) -> V { return {c.op(OpKind::Expand, {c.tensor(0, "self")}, Attrs{{"size", c.ints(1, "size")}})}; }},
    {"aten.detach.default", [](Converter& c) { return unary(c, OpKind::Detach); }},
    {"aten.t_.default", [](Converter& c) { return unary(c, OpKind::TInplace); }},
    {"aten.transpose.int", [](Converter& c) { return transpose(c, OpKind::Transpose); }},
    {"aten.transpose_.default", [](Converter& c) { return transpose(c, OpKind::TransposeInplace); }},
    {"aten.unsqueeze.default",
     [](Converter& c) -> V { return {c.op(OpKind::Unsqueeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")[0]}})}; }},
    {"aten.unsqueeze_.default",
     [](Converter& c) -> V { return {c.op(OpKind::UnsqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")[0]}})}; }},
    {"aten.squeeze.default", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", Ints{}}})}; }},
    {"aten.squeeze.dim", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
    {"aten.squeeze.dims", [](Converter& c) -> V { return {c.op(OpKind::Squeeze, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
    {"aten.squeeze_.default", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", Ints{}}})}; }},
    {"aten.squeeze_.dim", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
    {"aten.squeeze_.dims", [](Converter& c) -> V { return {c.op(OpKind::SqueezeInplace, {c.tensor(0, "self")}, Attrs{{"dim", c.ints(1, "dim")}})}; }},
    {"aten.slice.Tensor",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       // Python clamps slice bounds to the dim (x[1:] passes end=2^63-1).
       Attrs a{{"dim", c.integer(1, "dim", 0)},
               {"start", c.clampedInteger(2, "start", 0)},
               {"end", c.clampedInteger(3, "end", kMaxIntArg)},
               {"step", c.integer(4, "step", 1)}};
       return {c.op(OpKind::Slice, {x}, a)};
     }},
    {"aten.select.int",
     [](Converter& c) -> V {
       return {c.op(OpKind::Select, {c.tensor(0, "self")},
                    Attrs{{"dim", c.integer(1, "dim")}, {"index", c.integer(2, "index")}})};
     }},
    {"aten._to_copy.default",
     [](Converter& c) -> V {
       tensorOptions(c);
       ValueId x = c.tensor(0, "self");
       DType d = dtypeArg(c, 1, "dtype", c.type(x).dtype);
       return {c.op(OpKind::Cast, {x}, Attrs{{"dtype", std::string(dtypeName(d))}})};
     }},
    {"aten.cat.default", catOp},
    {"aten.stack.default", stack},
    {"aten.split.Tensor", split},
    {"aten.split_with_sizes.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return splitSizes(c, x, dimArg(c, 2, "dim", x), c.ints(1, "split_sizes")); }},
    {"aten.unbind.int",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       int64_t dim = dimArg(c, 1, "dim", x);
       V out;
       for (int64_t i = 0; i < c.type(x).sizes[static_cast<size_t>(dim)]; ++i)
         out.push_back(c.op(OpKind::Select, {x}, Attrs{{"dim", dim}, {"index", i}}));
       return out;
     }},
    {"aten.narrow.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       int64_t s = c.integer(2, "start"), n = c.integer(3, "length");
       return {c.op(OpKind::Slice, {x}, Attrs{{"dim", dimArg(c, 1, "dim", x)}, {"start", s}, {"end", s + n}, {"step", int64_t{1}}})};
     }},
    {"aten.permute.default", [](Converter& c) -> V { return {c.op(OpKind::Permute, {c.tensor(0, "self")}, Attrs{{"dims", c.ints(1, "dims")}})}; }},
    {"aten._reshape_alias.default",
     [](Converter& c) {
       // The strides ATen derived from self's layout for the view: the values
       // do not depend on them, and the layout the graph records is kept.
       c.ignore(2, "stride");
       return reshape(c);
     }},
    // alias is a view that keeps the gradient (not detach).
    {"aten.alias.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return {c.op(OpKind::View, {x}, Attrs{{"size", c.type(x).sizes}})}; }},
    {"aten.as_strided.default", asStrided},
    {"aten.unfold.default", unfoldOp},
    {"aten.as_strided_.default", asStrided},
    {"aten.copy_.default",
     [](Converter& c) -> V { return {c.op(OpKind::CopyInplace, {c.tensor(0, "self"), c.tensor(1, "src")})}; }},
    {"aten.repeat.default", [](Converter& c) -> V { return {repeatOp(c, c.tensor(0, "self"), c.ints(1, "repeats"))}; }},
    {"aten.flip.default", [](Converter& c) -> V { return {flipOp(c, c.tensor(0, "self"), c.ints(1, "dims"))}; }},
    {"aten.roll.default", [](Converter& c) -> V { return {rollOp(c, c.tensor(0, "self"), c.ints(1, "shifts"), c.ints(2, "dims", Ints{}))}; }},
    {"aten.triu.default", [](Converter& c) -> V { return {triangle(c, c.tensor(0, "self"), c.integer(1, "diagonal", 0), true)}; }},
    {"aten.tril.default", [](Converter& c) -> V { return {triangle(c, c.tensor(0, "self"), c.integer(1, "diagonal", 0), false)}; }},
    {"aten.copy.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self"), src = c.tensor(1, "src");
       if (c.type(src).dtype != c.type(x).dtype) src = c.op(OpKind::Cast, {src}, Attrs{{"dtype", std::string(dtypeName(c.type(x).dtype))}});
       if (c.type(src).sizes != c.type(x).sizes) src = c.op(OpKind::Expand, {src}, Attrs{{"size", c.type(x).sizes}});
       return {c.op(OpKind::Clone, {src})};
     }},
    {"aten.slice_scatter.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       Attrs a{{"dim", dimArg(c, 2, "dim", x)}, {"start", c.clampedInteger(3, "start", 0)},
               {"end", c.clampedInteger(4, "end", kMaxIntArg)}, {"step", c.integer(5, "step", 1)}};
       return {c.op(OpKind::SliceScatter, {x, c.tensor(1, "src")}, a)};
     }},
    {"aten.select_scatter.default",
     [](Converter& c) -> V {
       ValueId x = c.tensor(0, "self");
       return {c.op(OpKind::SelectScatter, {x, c.tensor(1, "src")}, Attrs{{"dim", dimArg(c, 2, "dim", x)}, {"index", c.integer(3, "index")}})};
     }},
    {"aten.unsafe_split.Tensor", split},
    {"aten.unsafe_split_with_sizes.default",
     [](Converter& c) -> V { ValueId x = c.tensor(0, "self"); return splitSizes(c, x, dimArg(c, 2, "dim", x), c.ints(1, "split_sizes")); }},
    {"aten.diagonal.default",
     [](Converter& c) -> V {
       Attrs a{{"offset", c.integer(1, "offset", 0)}, {"dim1", c.integer(2, "dim1", 0)}, {"dim2", c.integer(3, "dim2", 1)}};
       return {c.op(OpKind::Diagonal, {c.tensor(0, "self")}, a)};
     }},
    {"aten.diagonal_scatter.default",
     [](Converter& c) -> V {
       Attrs a{{"offset", c.integer(2, "offset", 0)}, {"dim1", c.integer(3, "dim1", 0)}, {"dim2", c.integer(4, "dim2", 1)}};
       ValueId x = c.tensor(0, "self");
       ValueId src = c.tensor(1, "src");
       if (!c.type(x).isContiguous()) x = c.op(OpKind::Clone, {x});
       if (!c.type(src).isContiguous()) src = c.op(OpKind::Clone, {src});
       return {c.op(OpKind::DiagonalScatter, {x, src}, a)};
     }},
    {"aten.diag.default",
     [](Converter& c) -> V {
       // 2-D: a copy of the diagonal; 1-D: a square matrix holding it.
       ValueId x = c.tensor(0, "self");
       int64_t k = c.integer(1, "diagonal", 0);
       const TensorType t = c.type(x);
       if (t.rank() == 2) return {c.op(OpKind::Clone, {c.op(OpKind::Diagonal, {x}, Attrs{{"offset", k}})})};
       if (t.rank() != 1) c.fail("diag: the input must be 1-D or 2-D");
       const int64_t n = t.sizes[0] + (k < 0 ? -k : k);
       ValueId z = constantLike(c, 0.0, TensorType::contiguous(t.dtype, {n, n}));
       return {c.op(OpKind::DiagonalScatter, {z, t.isContiguous() ? x : c.op(OpKind::Clone, {x})}, Attrs{{"offset", k}})};
     }},
    {"aten.pixel_shuffle.default", [](Converter& c) -> V { return {pixelShuffle(c, c.tensor(0, "self"), c.integer(1, "upscale_factor"), false)}; }},
    {"aten.pixel_unshuffle.default", [](Converter& c) -> V { return {pixelShuffle(c, c.tensor(0, "self"), c.integer(1, "downscale_factor"), true)}; }},
    {"aten.resize_.default",
     [](Converter& c) -> V {
       // A resize to the tensor's own shape (what out= wrappers do) is a
       // no-op; any other changes its storage: a larger one exposes
       // uninitialized memory, a smaller one reinterprets it.
       ValueId x = c.tensor(0, "self");
       Ints size = c.ints(1, "size");
       if (size != c.type(x).sizes)
         c.fail(cat("resize_ from ", TensorType::contiguous(c.type(x).dtype, c.type(x).sizes).str(), " to ", json(size).dump(),
                    " changes the tensor's storage, which aotc does not support (only a resize to the tensor's own shape); "
                    "use reshape, or a new tensor (new_zeros)"));
       if (c.has(2, "memory_format")) c.fail("resize_: memory_format is not supported");
       return {x};
     }},
  };
}

}  // namespace aotc::fx
