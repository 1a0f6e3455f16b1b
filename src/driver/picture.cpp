//===- picture.cpp - `aotc graph` (Note [Pictures]) -------------------------===//
#include "aotc/driver/picture.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "aotc/codegen/codegen.h"
#include "aotc/ops/ops.h"
#include "aotc/passes/passes.h"
#include "aotc/plan/plan.h"
#include "aotc/runtime/reference_runtime.h"
#include "aotc/support/diag.h"
#include "aotc/text/text.h"

namespace aotc {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// ------------------------------------------------------------ the picture

/// A node of the picture: an IR node, graph input or output, a file's node,
/// or (kernel view) a whole step.
struct PNode {
  std::string id, label, cls;
  int cluster = -1;  ///< innermost cluster (a kernel's, or a program's)
  int kernel = -1;   ///< the kernel cluster computing it, -1 when none
  bool fold = false;  ///< a view or constant: folded into its neighbours in the kernel view
  std::string link;   ///< a saved tensor: the forward node that computed it
  json info = json::object();
};

struct PEdge {
  std::string from, to, cls;  ///< cls: data, saved, writes
  bool operator<(const PEdge& o) const { return std::tie(from, to, cls) < std::tie(o.from, o.to, o.cls); }
};

struct PCluster {
  std::string id, label, cls;
  int parent = -1;
  json info = json::object();
};

struct Picture {
  std::string title;
  std::vector<PNode> nodes;
  std::vector<PEdge> edges;
  std::vector<PCluster> clusters;
  json kernels = json::object();  ///< kernel name -> CUDA source
  std::string view = "node";

  void add(PNode n) { nodes.push_back(std::move(n)); }
  int cluster(PCluster c) {
    clusters.push_back(std::move(c));
    return static_cast<int>(clusters.size()) - 1;
  }
};

/// Note [Saved edges].
constexpr size_t kSavedEdgesMax = 300;

/// How each class is drawn (DOT attributes), and what the legend calls it.
struct Style {
  const char* cls;
  const char* attrs;
  const char* legend;
};
constexpr Style kStyles[] = {
    {"input", "shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\"", "user input"},
    {"param", "shape=box, style=\"rounded,filled\", fillcolor=\"#fff6d5\"", "parameter, buffer or constant input"},
    {"tangent", "shape=box, style=\"rounded,filled\", fillcolor=\"#fde8e8\"", "grad output (tangent)"},
    {"saved", "shape=ellipse, style=filled, fillcolor=\"#e6d9f7\"", "saved for the backward"},
    {"forward", "shape=box, style=filled, fillcolor=\"#d5e5ff\"", "forward node"},
    {"backward", "shape=box, style=filled, fillcolor=\"#ffdfc2\"", "backward node"},
    {"recompute", "shape=box, style=\"filled,dashed\", fillcolor=\"#d4f2d4\"", "recomputed in the backward"},
    {"epilogue", "shape=box, style=filled, fillcolor=\"#f9c6cc\"", "epilogue copy into an input"},
    {"view", "shape=box, style=filled, fillcolor=\"#eeeeee\", fontcolor=\"#555555\"", "view (no kernel)"},
    {"unsupported", "shape=box, style=\"filled,bold\", fillcolor=\"#ff8a8a\", color=\"#b00000\", penwidth=2", "unsupported op"},
    {"output", "shape=plaintext", "program output"},
    {"kernel-forward", "shape=box, style=filled, fillcolor=\"#d5e5ff\"", "forward kernel"},
    {"kernel-backward", "shape=box, style=filled, fillcolor=\"#ffdfc2\"", "backward kernel"},
    {"extern", "shape=box, style=filled, fillcolor=\"#fff1a8\"", "cuBLAS / cuDNN call"},
};

const Style& styleOf(const std::string& cls) {
  for (const Style& s : kStyles)
    if (cls == s.cls) return s;
  AOTC_CHECK(false, "no style for picture class ", cls);
  return kStyles[0];
}

std::string dotQuote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

/// At most `n` characters, with an ellipsis.
std::string clip(const std::string& s, size_t n = 60) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

std::string where(const SourceLoc& loc) {
  std::string w = loc.source;
  if (!loc.scope.empty()) w += (w.empty() ? "in " : " in ") + loc.scope;
  return w;
}

void locInfo(json& info, const SourceLoc& loc) {
  if (!loc.node.empty()) info["user node"] = loc.node;
  if (!loc.op.empty()) info["user op"] = loc.op;
  if (!loc.source.empty()) info["source"] = loc.source;
  if (!loc.scope.empty()) info["module"] = loc.scope;
}

// ------------------------------------------------------------ IR graphs

/// A node as the picture names it: its first result and op.
std::string nodeLabelName(const Graph& g, const Node& n) {
  return n.outputs.empty() ? std::string(opName(n.op)) : "%" + g.values[n.outputs[0]].name + " (" + opName(n.op) + ")";
}

/// What the code generator made of one program.
struct Lowered {
  const plan::Program* program = nullptr;
  const std::vector<std::vector<int32_t>>* stepNodes = nullptr;
  const CodegenResult* cg = nullptr;
};

/// Adds graph `g` under cluster `parent`: ids start with `pre`.  With
/// `saved` (a picture of both programs), the forward's saved outputs are
/// recorded there (name -> producer id) instead of drawn, and the backward's
/// saved inputs get an edge from that producer.
void addGraph(Picture& P, const Graph& g, const std::string& pre, int parent, const Lowered& low, bool backwardProgram,
              std::map<std::string, std::string>* saved = nullptr) {
  const std::string phaseWord = backwardProgram ? "backward" : "forward";
  std::vector<int> kernelOf(g.nodes.size(), -1);
  if (low.program) {
    for (size_t s = 0; s < low.program->steps.size(); ++s) {
      const std::vector<int32_t>& ids = (*low.stepNodes)[s];
      if (ids.empty()) continue;
      const plan::Step& st = low.program->steps[s];
      PCluster c;
      c.id = pre + "k" + std::to_string(s);
      c.parent = parent;
      c.info["kind"] = "step";
      c.info["step"] = phaseWord + " step " + std::to_string(s) + ": " + plan::stepLabel(st);
      if (auto* l = std::get_if<plan::Launch>(&st)) {
        c.cls = "kernel-" + phaseWord;
        c.label = l->kernel;
        c.info["kernel"] = l->kernel;
        c.info["grid"] = l->grid;
        c.info["block"] = l->block;
        if (l->epilogue) c.info["epilogue into"] = l->epilogue->input;
        if (auto it = low.cg->kernels.find(l->kernel); it != low.cg->kernels.end()) P.kernels[l->kernel] = it->second.source;
      } else if (auto* gm = std::get_if<plan::Gemm>(&st)) {
        c.cls = "extern";
        c.label = plan::stepLabel(st);
        c.info["m, n, k, batch"] = std::vector<int64_t>{gm->m, gm->n, gm->k, gm->batch};
        c.info["transa, transb"] = std::vector<bool>{gm->transa, gm->transb};
      } else {
        auto& cv = std::get<plan::Conv>(st);
        c.cls = "extern";
        c.label = plan::stepLabel(st);
        c.info["stride"] = cv.stride;
        c.info["padding"] = cv.pad;
        c.info["groups"] = cv.groups;
      }
      std::vector<std::string> members;
      for (int32_t id : ids) members.push_back(nodeLabelName(g, g.nodes[static_cast<size_t>(id)]));
      c.info["nodes"] = members;
      c.label += members.size() > 1 ? " (" + std::to_string(members.size()) + " nodes)" : "";
      int ci = P.cluster(std::move(c));
      for (int32_t id : ids)
        if (kernelOf[static_cast<size_t>(id)] < 0) kernelOf[static_cast<size_t>(id)] = ci;
    }
  }
  auto producer = [&](ValueId v) {
    const Value& val = g.values[v];
    return val.node < 0 ? pre + "v" + std::to_string(v) : pre + "n" + std::to_string(val.node);
  };
  for (const GraphInput& in : g.inputs) {
    PNode n;
    n.id = producer(in.value);
    n.cluster = parent;
    const std::string& name = g.values[in.value].name;
    n.label = "%" + clip(name) + "\n" + g.type(in.value).str();
    n.cls = in.role == InputRole::UserInput ? "input" : in.role == InputRole::Tangent ? "tangent" : in.role == InputRole::Saved ? "saved" : "param";
    n.info["kind"] = "input";
    n.info["name"] = "%" + name;
    n.info["type"] = g.type(in.value).str();
    n.info["role"] = inputRoleName(in.role);
    if (in.requires_grad) n.info["requires_grad"] = true;
    if (in.role == InputRole::Saved && saved) {
      if (auto it = saved->find(name); it != saved->end()) {
        P.edges.push_back({it->second, n.id, "saved"});
        n.link = it->second;
        n.info["saved by the forward"] = "%" + name;
      }
    } else if (in.role != InputRole::Saved) {
      n.label += "\n" + std::string(inputRoleName(in.role));
    }
    P.add(std::move(n));
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    const OpInfo& op = opInfo(node.op);
    PNode n;
    n.id = pre + "n" + std::to_string(k);
    n.kernel = kernelOf[k];
    n.cluster = n.kernel >= 0 ? n.kernel : parent;
    n.label = opName(node.op);
    for (size_t i = 0; i < node.outputs.size() && i < 3; ++i)
      n.label += "\n%" + clip(g.values[node.outputs[i]].name, 40) + " : " + clip(g.type(node.outputs[i]).str(), 40);
    if (node.outputs.size() > 3) n.label += "\n(" + std::to_string(node.outputs.size()) + " outputs)";
    std::string tags;
    if (node.tags & kMustSave) tags += " #must_save";
    if (node.tags & kMustBeInForward) tags += " #must_be_in_forward";
    if (node.tags & kMustBeInBackward) tags += " #must_be_in_backward";
    if (!tags.empty()) n.label += "\n" + tags.substr(1);
    if (std::string w = where(node.loc); !w.empty()) n.label += "\n" + clip(w);
    bool recomputed = backwardProgram && node.phase == Phase::Forward;
    n.fold = op.category == OpCategory::View || node.op == OpKind::Constant;
    n.cls = node.op == OpKind::EpilogueCopy ? "epilogue"
            : recomputed                    ? "recompute"
            : op.category == OpCategory::View ? "view"
            : node.phase == Phase::Backward ? "backward"
                                            : "forward";
    n.info["kind"] = "node";
    n.info["op"] = opName(node.op);
    n.info["ir"] = printNode(g, node);
    json outs = json::array();
    for (ValueId o : node.outputs) outs.push_back("%" + g.values[o].name + " : " + g.type(o).str());
    n.info["outputs"] = outs;
    json ins = json::array();
    for (ValueId i : node.inputs) ins.push_back("%" + g.values[i].name + " : " + g.type(i).str());
    n.info["inputs"] = ins;
    locInfo(n.info, node.loc);
    if (!tags.empty()) n.info["tags"] = tags.substr(1);
    n.info["phase"] = recomputed ? "forward, recomputed in the backward" : node.phase == Phase::Backward ? "backward" : "forward";
    if (n.kernel >= 0) {
      const json& ci = P.clusters[static_cast<size_t>(n.kernel)].info;
      n.info["step"] = ci["step"];
      if (ci.contains("kernel")) n.info["kernel"] = ci["kernel"];
    } else if (low.program && !n.fold) {
      n.info["step"] = "none (computed inside the kernels that read it)";
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.op == OpKind::EpilogueCopy && i == 0) continue;
      P.edges.push_back({producer(node.inputs[i]), n.id, "data"});
    }
    if (node.op == OpKind::EpilogueCopy) P.edges.push_back({n.id, producer(node.inputs[0]), "writes"});
    P.add(std::move(n));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const GraphOutput& o = g.outputs[i];
    if (o.role == OutputRole::Saved && saved && !backwardProgram) {
      (*saved)[g.values[o.value].name] = producer(o.value);
      continue;
    }
    PNode n;
    n.id = pre + "o" + std::to_string(i);
    n.cluster = parent;
    n.cls = "output";
    n.label = std::string(outputRoleName(o.role)) + (o.target.empty() ? "" : " " + clip(o.target)) +
              (o.role == OutputRole::Saved ? " %" + clip(g.values[o.value].name) : "");
    n.info["kind"] = "output";
    n.info["role"] = outputRoleName(o.role);
    n.info["value"] = "%" + g.values[o.value].name + " : " + g.type(o.value).str();
    if (!o.target.empty()) n.info["target"] = o.target;
    if (o.alias_of) n.info["alias of"] = *o.alias_of;
    P.edges.push_back({producer(o.value), n.id, "data"});
    P.add(std::move(n));
  }
}

// ------------------------------------------------------------ a file's own graph

/// The model file's nodes before conversion (frontend.h SourceGraph).
Picture sourcePicture(const SourceGraph& sg) {
  Picture P;
  P.title = sg.name + " (captured, as the file has it)";
  std::map<std::string, std::string> idOf;
  for (size_t i = 0; i < sg.nodes.size(); ++i) idOf[sg.nodes[i].name] = "s" + std::to_string(i);
  size_t unsupported = 0;
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const SourceNode& s = sg.nodes[i];
    PNode n;
    n.id = idOf[s.name];
    n.cls = s.is_input ? (s.op == "user_input" || s.op == "input" ? "input" : "param") : s.unsupported.empty() ? "forward" : "unsupported";
    n.label = s.is_input ? clip(s.name) + "\n" + s.op : clip(s.op) + "\n" + clip(s.name, 40);
    if (!s.type.empty()) n.label += "\n" + clip(s.type, 40);
    if (std::string w = where(s.loc); !w.empty() && !s.is_input) n.label += "\n" + clip(w);
    n.info["kind"] = s.is_input ? "input" : "node";
    n.info["name"] = s.name;
    n.info["op"] = s.op;
    if (!s.type.empty()) n.info["type"] = s.type;
    if (!s.is_input) locInfo(n.info, s.loc);
    n.info.erase("user node");
    n.info.erase("user op");
    if (!s.unsupported.empty()) {
      n.info["unsupported"] = s.unsupported;
      ++unsupported;
    }
    for (const std::string& in : s.inputs)
      if (auto it = idOf.find(in); it != idOf.end()) P.edges.push_back({it->second, n.id, "data"});
    P.add(std::move(n));
  }
  for (size_t i = 0; i < sg.outputs.size(); ++i) {
    auto it = idOf.find(sg.outputs[i]);
    if (it == idOf.end()) continue;
    PNode n;
    n.id = "so" + std::to_string(i);
    n.cls = "output";
    n.label = "output " + std::to_string(i);
    n.info["kind"] = "output";
    n.info["value"] = sg.outputs[i];
    P.edges.push_back({it->second, n.id, "data"});
    P.add(std::move(n));
  }
  P.title += ", " + std::to_string(unsupported) + " unsupported node" + (unsupported == 1 ? "" : "s");
  return P;
}

// ------------------------------------------------------------ the kernel view

/// One node per step: a kernel cluster becomes a node, views and constants
/// fold into the nodes around them, user inputs, tangents, outputs and saved
/// tensors stay.  Parameters and buffers are listed in the details of the
/// steps that read them instead of drawn: hundreds of inputs at the top with
/// edges to every depth of the program made Graphviz's layout of
/// efficientnet_b0's kernel view take 30 s instead of 3.5 s.
Picture kernelView(const Picture& P) {
  Picture K;
  K.title = P.title + " (kernel view)";
  K.kernels = P.kernels;
  K.view = "kernel";
  std::vector<int> remap(P.clusters.size(), -1);
  for (size_t c = 0; c < P.clusters.size(); ++c) {
    if (P.clusters[c].cls.rfind("kernel-", 0) == 0 || P.clusters[c].cls == "extern") continue;
    PCluster pc = P.clusters[c];
    pc.parent = pc.parent >= 0 ? remap[static_cast<size_t>(pc.parent)] : -1;
    remap[c] = K.cluster(std::move(pc));
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < P.nodes.size(); ++i) index[P.nodes[i].id] = i;
  std::map<std::string, std::vector<std::string>> preds;
  for (const PEdge& e : P.edges)
    if (e.cls == "data") preds[e.to].push_back(e.from);
  // Each node's representative: its kernel's node, or (a folded view) its source's.
  std::map<std::string, std::string> rep;
  std::function<std::string(const std::string&, int)> repOf = [&](const std::string& id, int depth) -> std::string {
    if (auto it = rep.find(id); it != rep.end()) return it->second;
    const PNode& n = P.nodes[index.at(id)];
    std::string r = n.id;
    if (n.kernel >= 0) {
      r = P.clusters[static_cast<size_t>(n.kernel)].id;
    } else if (n.fold) {
      r.clear();
      auto p = preds.find(id);
      if (p != preds.end() && !p->second.empty() && depth < 10000) r = repOf(p->second.front(), depth + 1);
    }
    return rep[id] = r;
  };
  // Each kernel's ops and first source line, in one pass over the nodes.
  std::map<int, std::pair<std::vector<std::string>, std::string>> members;
  for (const PNode& m : P.nodes) {
    if (m.kernel < 0) continue;
    auto& [ops, src] = members[m.kernel];
    std::string op = m.info.value("op", "");
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    if (src.empty()) src = m.info.value("source", "");
  }
  std::set<std::string> made;
  for (const PNode& n : P.nodes) {
    if (n.kernel >= 0) {
      const PCluster& c = P.clusters[static_cast<size_t>(n.kernel)];
      if (!made.insert(c.id).second) continue;
      PNode k;
      k.id = c.id;
      k.cls = c.cls;
      k.label = c.label;
      const auto& [ops, src] = members.at(n.kernel);
      std::string opList;
      for (size_t i = 0; i < ops.size() && i < 6; ++i) opList += (i ? ", " : "") + ops[i];
      if (ops.size() > 6) opList += ", ...";
      k.label += "\n" + opList + (src.empty() ? "" : "\n" + src);
      k.info = c.info;
      k.cluster = c.parent >= 0 ? remap[static_cast<size_t>(c.parent)] : -1;
      K.add(std::move(k));
    } else if (!n.fold && n.cls != "param") {
      PNode k = n;
      k.cluster = n.cluster >= 0 ? remap[static_cast<size_t>(n.cluster)] : -1;
      K.add(std::move(k));
    }
  }
  std::map<std::string, size_t> kept;
  for (size_t i = 0; i < K.nodes.size(); ++i) kept[K.nodes[i].id] = i;
  for (PNode& n : K.nodes)
    if (!n.link.empty()) n.link = repOf(n.link, 0);
  std::set<PEdge> seen;
  for (const PEdge& e : P.edges) {
    PEdge r{repOf(e.from, 0), repOf(e.to, 0), e.cls};
    if (r.from.empty() || r.to.empty() || r.from == r.to || !seen.insert(r).second) continue;
    auto from = kept.find(r.from), to = kept.find(r.to);
    if (from != kept.end() && to != kept.end()) {
      K.edges.push_back(r);
      continue;
    }
    // A parameter or buffer: named in the details of the step on the other end.
    const PNode& param = P.nodes[index.at(from == kept.end() ? r.from : r.to)];
    auto other = from == kept.end() ? to : from;
    if (other == kept.end()) continue;
    const char* key = r.cls == "writes" ? "writes" : "reads";
    K.nodes[other->second].info[key].push_back(param.info.value("name", param.id));
  }
  return K;
}

// ------------------------------------------------------------ writers

/// Clusters with a node in them or in a cluster inside them (Graphviz draws no
/// empty cluster, so neither may the page's data list one).
std::vector<bool> drawnClusters(const Picture& P) {
  std::vector<bool> drawn(P.clusters.size(), false);
  for (const PNode& n : P.nodes)
    for (int c = n.cluster; c >= 0 && !drawn[static_cast<size_t>(c)]; c = P.clusters[static_cast<size_t>(c)].parent)
      drawn[static_cast<size_t>(c)] = true;
  return drawn;
}

std::string toDot(const Picture& P) {
  std::ostringstream os;
  os << "digraph " << dotQuote(P.title) << " {\n"
     << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10, newrank=true];\n"
     << "  node [fontname=\"Helvetica\", fontsize=9];\n"
     << "  edge [color=\"#777777\", arrowsize=0.6];\n";
  std::vector<std::vector<size_t>> members(P.clusters.size()), children(P.clusters.size());
  std::vector<size_t> top;
  for (size_t i = 0; i < P.nodes.size(); ++i) {
    if (P.nodes[i].cluster >= 0) members[static_cast<size_t>(P.nodes[i].cluster)].push_back(i);
    else top.push_back(i);
  }
  std::vector<size_t> roots;
  std::vector<bool> drawn = drawnClusters(P);
  for (size_t c = 0; c < P.clusters.size(); ++c) {
    if (!drawn[c]) continue;
    if (P.clusters[c].parent >= 0) children[static_cast<size_t>(P.clusters[c].parent)].push_back(c);
    else roots.push_back(c);
  }
  auto node = [&](const PNode& n, const std::string& ind) {
    os << ind << dotQuote(n.id) << " [id=" << dotQuote(n.id) << ", class=" << dotQuote(n.cls) << ", label=" << dotQuote(n.label)
       << ", " << styleOf(n.cls).attrs << "];\n";
  };
  std::function<void(size_t, const std::string&)> cluster = [&](size_t c, const std::string& ind) {
    const PCluster& pc = P.clusters[c];
    bool kernel = pc.cls != "program";
    os << ind << "subgraph " << dotQuote("cluster_" + pc.id) << " {\n"
       << ind << "  id=" << dotQuote(pc.id) << "; class=" << dotQuote("cluster-" + pc.cls) << "; label=" << dotQuote(pc.label)
       << "; fontsize=" << (kernel ? 8 : 12) << "; labeljust=l;\n"
       << ind << "  " << (kernel ? (pc.cls == "extern" ? "style=\"rounded,dashed\"; color=\"#a08000\";" : "style=\"rounded,dashed\"; color=\"#3a62b0\";")
                                 : "style=\"rounded\"; color=\"#999999\";")
       << "\n";
    for (size_t k : children[c]) cluster(k, ind + "  ");
    for (size_t i : members[c]) node(P.nodes[i], ind + "  ");
    os << ind << "}\n";
  };
  for (size_t c : roots) cluster(c, "  ");
  for (size_t i : top) node(P.nodes[i], "  ");
  // Note [Saved edges]: an edge from a forward value to the backward that
  // reads it spans both programs' ranks; a few hundred of them make
  // Graphviz's layout take minutes (mobilenet_v2's kernel view: 5 s without
  // them, over 5 minutes with).  A big picture leaves them out; the page
  // links each saved tensor to its forward node instead.
  const bool savedEdges = P.nodes.size() <= kSavedEdgesMax;
  for (const PEdge& e : P.edges) {
    if (e.cls == "saved" && !savedEdges) continue;
    os << "  " << dotQuote(e.from) << " -> " << dotQuote(e.to);
    if (e.cls == "saved") os << " [color=\"#7a4cc2\", penwidth=1.6, class=\"saved\"]";
    else if (e.cls == "writes") os << " [style=dashed, color=\"#c0392b\", label=\"writes\", fontsize=8, class=\"writes\"]";
    os << ";\n";
  }
  os << "}\n";
  return os.str();
}


/// The HTML page (Note [Pictures]): everything inline, no network.
constexpr const char* kHtml = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>@TITLE@</title>
<style>
  html, body { margin: 0; height: 100%; font: 13px/1.4 system-ui, sans-serif; color: #222; }
  body { display: grid; grid-template-columns: 1fr 420px; grid-template-rows: auto 1fr; height: 100vh; }
  header { grid-column: 1 / 3; display: flex; gap: 8px; align-items: center; padding: 6px 10px; border-bottom: 1px solid #ccc; background: #f7f7f7; flex-wrap: wrap; }
  header h1 { font-size: 14px; margin: 0 12px 0 0; }
  #aotc-canvas { overflow: hidden; position: relative; cursor: grab; background: #fff; }
  #aotc-canvas svg { width: 100%; height: 100%; display: block; user-select: none; }
  #aotc-details { border-left: 1px solid #ccc; overflow: auto; padding: 8px 12px; background: #fcfcfc; }
  #aotc-details table { border-collapse: collapse; width: 100%; }
  #aotc-details td { vertical-align: top; padding: 2px 4px; border-bottom: 1px solid #eee; word-break: break-word; }
  #aotc-details td:first-child { color: #666; white-space: nowrap; }
  #aotc-details pre { background: #f3f3f3; padding: 6px; overflow: auto; font-size: 11px; }
  .aotc-legend { display: flex; gap: 6px; flex-wrap: wrap; }
  .aotc-legend span { border: 1px solid #aaa; padding: 0 4px; border-radius: 3px; font-size: 11px; }
  g.node, g.cluster { cursor: pointer; }
  g.aotc-match > polygon, g.aotc-match > ellipse, g.aotc-match > path { stroke: #e6007e; stroke-width: 3px; }
  g.aotc-selected > polygon, g.aotc-selected > ellipse, g.aotc-selected > path { stroke: #000; stroke-width: 4px; }
</style>
</head>
<body>
<header>
  <h1 id="aotc-title"></h1>
  <input id="aotc-search" type="search" placeholder="search nodes (/), Enter: next" size="30">
  <span id="aotc-count"></span>
  <button id="aotc-zoom-in" title="zoom in">+</button>
  <button id="aotc-zoom-out" title="zoom out">&minus;</button>
  <button id="aotc-fit" title="fit the whole graph">fit</button>
  <div class="aotc-legend" id="aotc-legend"></div>
</header>
<main id="aotc-canvas">@SVG@</main>
<aside id="aotc-details"><p>Click a node or a kernel for its op, shapes, source line and kernel source. Drag to pan, wheel to zoom.</p></aside>
<script type="application/json" id="aotc-data">@DATA@</script>
<script>
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('aotc-data').textContent);
  document.getElementById('aotc-title').textContent = data.title;
  const legend = document.getElementById('aotc-legend');
  for (const l of data.legend) {
    const s = document.createElement('span');
    s.textContent = l.text;
    s.style.background = l.fill;
    legend.appendChild(s);
  }
  const canvas = document.getElementById('aotc-canvas');
  const svg = canvas.querySelector('svg');
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  const b = svg.viewBox.baseVal;
  const home = { x: b.x, y: b.y, w: b.width, h: b.height };
  let vb = Object.assign({}, home);
  function apply() { svg.setAttribute('viewBox', vb.x + ' ' + vb.y + ' ' + vb.w + ' ' + vb.h); }
  function toSvg(x, y) {
    const p = svg.createSVGPoint();
    p.x = x; p.y = y;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }
  function zoomAt(f, c) {
    vb.x = c.x - (c.x - vb.x) * f; vb.y = c.y - (c.y - vb.y) * f;
    vb.w *= f; vb.h *= f;
    apply();
  }
  function middle() { return { x: vb.x + vb.w / 2, y: vb.y + vb.h / 2 }; }
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    zoomAt(ev.deltaY > 0 ? 1.15 : 1 / 1.15, toSvg(ev.clientX, ev.clientY));
  }, { passive: false });
  let drag = null, dragged = false;
  svg.addEventListener('pointerdown', function (ev) { drag = { x: ev.clientX, y: ev.clientY }; dragged = false; canvas.style.cursor = 'grabbing'; });
  window.addEventListener('pointermove', function (ev) {
    if (!drag) return;
    const m = svg.getScreenCTM();
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 2) dragged = true;
    vb.x -= dx / m.a; vb.y -= dy / m.d;
    drag = { x: ev.clientX, y: ev.clientY };
    apply();
  });
  window.addEventListener('pointerup', function () { drag = null; canvas.style.cursor = ''; });
  document.getElementById('aotc-zoom-in').addEventListener('click', function () { zoomAt(1 / 1.4, middle()); });
  document.getElementById('aotc-zoom-out').addEventListener('click', function () { zoomAt(1.4, middle()); });
  document.getElementById('aotc-fit').addEventListener('click', function () { vb = Object.assign({}, home); apply(); });

  function centerOn(el) {
    const r = el.getBoundingClientRect();
    const c = toSvg(r.left + r.width / 2, r.top + r.height / 2);
    if (vb.w > 1600) { const f = 1600 / vb.w; vb.w *= f; vb.h *= f; }
    vb.x = c.x - vb.w / 2; vb.y = c.y - vb.h / 2;
    apply();
  }
  const details = document.getElementById('aotc-details');
  function row(table, k, v) {
    const tr = table.insertRow();
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = typeof v === 'string' ? v : JSON.stringify(v);
  }
  function show(id) {
    const item = data.items[id];
    if (!item) return;
    for (const e of document.querySelectorAll('.aotc-selected')) e.classList.remove('aotc-selected');
    const el = document.getElementById(id);
    if (el) el.classList.add('aotc-selected');
    details.replaceChildren();
    const h = document.createElement('h2');
    h.style.fontSize = '14px';
    h.textContent = item.label.split('\n')[0];
    details.appendChild(h);
    const table = document.createElement('table');
    table.id = 'aotc-fields';
    row(table, 'drawn as', item.legend);
    for (const [k, v] of Object.entries(item.info)) {
      if (Array.isArray(v) && k !== 'grid' && k !== 'block') v.forEach(function (x, i) { row(table, i ? '' : k, x); });
      else row(table, k, v);
    }
    details.appendChild(table);
    if (item.link && document.getElementById(item.link)) {
      const a = document.createElement('button');
      a.id = 'aotc-link';
      a.textContent = 'show the forward node that computed it';
      a.addEventListener('click', function () { show(item.link); centerOn(document.getElementById(item.link)); });
      details.appendChild(a);
    }
    const kernel = item.info.kernel;
    if (kernel && data.kernels[kernel] !== undefined) {
      const t = document.createElement('h3');
      t.style.fontSize = '13px';
      t.textContent = 'kernel ' + kernel;
      details.appendChild(t);
      const pre = document.createElement('pre');
      pre.id = 'aotc-kernel-source';
      pre.textContent = data.kernels[kernel];
      details.appendChild(pre);
    }
  }
  svg.addEventListener('click', function (ev) {
    if (dragged) return;
    const g = ev.target.closest('g.node, g.cluster');
    if (g && data.items[g.id]) show(g.id);
  });

  const search = document.getElementById('aotc-search');
  const count = document.getElementById('aotc-count');
  const text = {};
  for (const [id, item] of Object.entries(data.items)) text[id] = (item.label + ' ' + JSON.stringify(item.info)).toLowerCase();
  let matches = [], at = -1;
  search.addEventListener('input', function () {
    for (const e of document.querySelectorAll('.aotc-match')) e.classList.remove('aotc-match');
    const q = search.value.trim().toLowerCase();
    matches = [];
    at = -1;
    if (q) for (const id of Object.keys(text)) if (text[id].includes(q) && document.getElementById(id)) matches.push(id);
    for (const id of matches) document.getElementById(id).classList.add('aotc-match');
    count.textContent = q ? matches.length + (matches.length === 1 ? ' match' : ' matches') : '';
  });
  search.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && matches.length) {
      at = (at + 1) % matches.length;
      show(matches[at]);
      centerOn(document.getElementById(matches[at]));
    } else if (ev.key === 'Escape') {
      search.value = '';
      search.dispatchEvent(new Event('input'));
    }
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === '/' && document.activeElement !== search) { ev.preventDefault(); search.focus(); }
  });
})();
</script>
</body>
</html>
)HTML";

std::string fillOf(const Style& s) {
  std::string a = s.attrs;
  size_t p = a.find("fillcolor=\"");
  return p == std::string::npos ? "#ffffff" : a.substr(p + 11, 7);
}

std::string htmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string toHtml(const Picture& P, const std::string& svgText) {
  json items = json::object();
  std::set<std::string> used;
  for (const PNode& n : P.nodes) {
    items[n.id] = json{{"label", n.label}, {"legend", styleOf(n.cls).legend}, {"info", n.info}};
    if (!n.link.empty()) items[n.id]["link"] = n.link;
    used.insert(n.cls);
  }
  std::vector<bool> drawn = drawnClusters(P);
  for (size_t i = 0; i < P.clusters.size(); ++i) {
    const PCluster& c = P.clusters[i];
    if (drawn[i])
      items[c.id] = json{{"label", c.label}, {"legend", c.cls == "program" ? "program" : styleOf(c.cls).legend}, {"info", c.info}};
  }
  json legend = json::array();
  for (const Style& s : kStyles)
    if (used.count(s.cls)) legend.push_back(json{{"text", s.legend}, {"fill", fillOf(s)}});
  json data{{"title", P.title}, {"view", P.view}, {"items", items}, {"kernels", P.kernels}, {"legend", legend}};
  // Inside <script>, "</" would end the element; "<\/" is the same JSON.
  std::string d = data.dump(-1, ' ', false, json::error_handler_t::replace), safe;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '<' && i + 1 < d.size() && d[i + 1] == '/') safe += "<\\";
    else safe += d[i];
  }
  std::string svg = svgText.substr(std::min(svgText.find("<svg"), svgText.size()));
  // One pass over the template: a label holding "@DATA@" stays text.
  const std::string page = kHtml;
  std::string out;
  size_t from = 0;
  for (auto& [key, value] : {std::pair<std::string, std::string>{"@TITLE@", htmlEscape(P.title)}, {"@SVG@", svg}, {"@DATA@", safe}}) {
    size_t p = page.find(key, from);
    AOTC_CHECK(p != std::string::npos, "the HTML template lacks ", key);
    out += page.substr(from, p - from) + value;
    from = p + key.size();
  }
  return out + page.substr(from);
}

}  // namespace

std::string dotToSvg(const std::string& dot, const std::string& what) {
  // Graphviz reports through its own error hook; keep warnings off stderr.
  agseterr(AGERR);
  GVC_t* gvc = gvContext();
  if (!gvc) throw UserError(SourceLoc{what}, "cannot start Graphviz");
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) {
    gvFreeContext(gvc);
    throw UserError(SourceLoc{what}, "Graphviz cannot read the DOT text aotc wrote (a bug in aotc)");
  }
  std::string svg;
  if (gvLayout(gvc, g, "dot") == 0) {
    char* data = nullptr;
    unsigned int len = 0;
    gvRenderData(gvc, g, "svg", &data, &len);
    if (data) svg.assign(data, len);
    gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agclose(g);
  gvFreeContext(gvc);
  if (svg.empty())
    throw UserError(SourceLoc{what}, "Graphviz could not lay the graph out (is the graphviz package, with its dot plugin, installed?)");
  return svg;
}


namespace {
const std::vector<std::string> kProgramStages = {"program", "forward", "backward"};
}  // namespace

std::string graphOf(const GraphRequest& r, std::string* note) {
  const bool picture = r.format != "ir";
  if (r.format != "dot" && r.format != "svg" && r.format != "html" && r.format != "ir")
    throw UserError(SourceLoc{r.path}, "unknown --format '" + r.format + "' (dot, svg, html, ir)");
  if (r.view != "auto" && r.view != "node" && r.view != "kernel")
    throw UserError(SourceLoc{r.path}, "unknown --view '" + r.view + "' (auto, node, kernel)");
  if (!picture && r.view == "kernel") throw UserError(SourceLoc{r.path}, "--view kernel draws pictures: use --format dot, svg or html");
  std::error_code ec;
  const bool artifact = fs::is_directory(r.path, ec);
  const bool programStage = std::find(kProgramStages.begin(), kProgramStages.end(), r.stage) != kProgramStages.end();

  Picture P;
  Partition part;
  std::string name;
  std::optional<Graph> single;  // a stage that is one graph without code
  std::optional<CodegenResult> compiled;  // the Compilation's code, for a model file's static programs
  if (artifact) {
    // An artifact holds its programs as IR (forward.ir, backward.ir, joint.ir).
    plan::Manifest m = loadManifest(r.path);
    name = m.model_name;
    if (r.stage == "joint" || r.stage == "functionalize-joint") {
      single = loadArtifactGraph(r.path, "joint.ir");
    } else if (programStage) {
      part.forward = loadArtifactGraph(r.path, m.forward.ir);
      part.backward = loadArtifactGraph(r.path, m.backward.ir);
      for (const GraphOutput& o : part.forward.outputs)
        if (o.role == OutputRole::Saved) part.saved.push_back(part.forward.values[o.value].name);
    } else {
      throw UserError(SourceLoc{r.path}, "an artifact holds the program, forward, backward and joint stages; --stage " + r.stage +
                                             " needs the model file");
    }
  } else if (r.stage == "captured") {
    SourceGraph sg = readSourceGraph(r.path);
    bool unsupported = std::any_of(sg.nodes.begin(), sg.nodes.end(), [](const SourceNode& n) { return !n.unsupported.empty(); });
    if (unsupported && picture) {
      P = sourcePicture(sg);
      if (note) *note = "the model has ops aotc cannot convert: drawing the file's own graph, those nodes highlighted";
    } else {
      single = loadModel(r.path, r.compile.frontend).graph;
    }
  } else {
    // Note [One Compilation]: the programs compile writes with these flags,
    // and for a static graph the code generator's own steps from the same
    // Compilation.
    CompileOptions co = r.compile;
    co.model = r.path;
    Compilation c(co, std::make_shared<spdlog::logger>("aotc-graph", std::make_shared<spdlog::sinks::null_sink_mt>()));
    if (!programStage)
      c.observe([&](const std::string& stage, const Graph& g) {
        if (stage == r.stage) single = g;
      });
    const PipelineResult& pr = c.engine();
    name = c.model().graph.name;
    if (programStage) {
      part = pr.partition;
      if (picture && part.forward.symbols.empty()) compiled = c.generated().cg;
    } else if (!single) {
      std::string stages = "captured";
      for (const std::string& s : pipelineStageNames())
        if (s.rfind("partition.", 0) != 0) stages += ", " + s;
      throw UserError(SourceLoc{r.path}, "unknown stage '" + r.stage + "' (" + stages + ", forward, backward, program)");
    }
  }

  if (!picture) {
    if (single) return printGraph(*single);
    if (r.stage == "forward") return printGraph(part.forward);
    if (r.stage == "backward") return printGraph(part.backward);
    return printGraph(part.forward) + printGraph(part.backward);
  }
  CodegenResult cg;
  if (single) {
    P.title = single->name + " (" + r.stage + ")";
    addGraph(P, *single, "g_", -1, Lowered{}, false);
  } else if (programStage) {
    if (compiled) {
      cg = std::move(*compiled);
    } else {
      CodegenOptions co;
      if (!part.forward.symbols.empty()) co.decide = &part;
      cg = generateCuda(part, co);
    }
    Lowered fw{&cg.forward, &cg.forwardStepNodes, &cg}, bw{&cg.backward, &cg.backwardStepNodes, &cg};
    if (r.stage == "program") {
      P.title = (name.empty() ? part.forward.name : name) + " (forward and backward programs)";
      int f = P.cluster(PCluster{"forward", "forward program", "program", -1, json{{"kind", "program"}, {"program", "forward"}}});
      int b = P.cluster(PCluster{"backward", "backward program", "program", -1, json{{"kind", "program"}, {"program", "backward"}}});
      std::map<std::string, std::string> saved;
      addGraph(P, part.forward, "f_", f, fw, false, &saved);
      addGraph(P, part.backward, "b_", b, bw, true, &saved);
    } else if (r.stage == "forward") {
      P.title = part.forward.name + " (forward program)";
      addGraph(P, part.forward, "f_", -1, fw, false);
    } else {
      P.title = part.backward.name + " (backward program)";
      addGraph(P, part.backward, "b_", -1, bw, true);
    }
  }
  bool kernels = std::any_of(P.clusters.begin(), P.clusters.end(), [](const PCluster& c) { return c.cls != "program"; });
  if (r.view == "kernel" && !kernels)
    throw UserError(SourceLoc{r.path}, "the kernel view draws the code generator's steps: use --stage program, forward or backward");
  if (r.view == "kernel" || (r.view == "auto" && kernels && P.nodes.size() > kAutoKernelView)) {
    if (r.view == "auto" && note)
      *note = cat(P.nodes.size(), " nodes: drawing one box per kernel (--view node draws every node; Graphviz may take minutes)");
    P = kernelView(P);
  }
  std::string dot = toDot(P);
  if (r.format == "dot") return dot;
  std::string svg = dotToSvg(dot, r.path);
  return r.format == "svg" ? svg : toHtml(P, svg);
}

}  // namespace aotc
