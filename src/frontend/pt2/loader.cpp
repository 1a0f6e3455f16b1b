//===- pt2/loader.cpp - torch.export .pt2 archives -> a Model ---------------===//
//
// Reads the archive torch.export.save writes (PyTorch 2.8+): checks its
// format and byte order, picks the program (models/<name>.json; --model when
// there are several), translates it into an FX document (Note [pt2 front
// end], translate.cpp) and reads the initial values of its parameters,
// buffers and constants from the archive's raw records.  Pickled records,
// the legacy layout and AOTInductor-only packages are refused by name; no
// pickle is ever read.
//===----------------------------------------------------------------------===//
#include "aotc/frontend/pt2.h"

#include <algorithm>

#include "aotc/frontend/fx.h"
#include "aotc/ir/safetensors.h"
#include "archive.h"
#include "translate.h"

namespace aotc {

namespace pt2 {

namespace {

constexpr uint64_t kMaxJsonBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxSmallBytes = uint64_t{1} << 16;
/// The schema major this reader knows (torch/_export/serde/schema.py: 8.20 in 2.15).
constexpr int64_t kSchemaMajor = 8;

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  return s;
}

json parseJson(const Archive& a, const std::string& name) {
  try {
    return json::parse(a.read(name, kMaxJsonBytes));
  } catch (const json::parse_error& e) {
    throw UserError(SourceLoc{a.path(), name, ""}, std::string("malformed JSON: ") + e.what());
  }
}

/// The program's name: the archive's only models/<name>.json, or --model.
std::string pickModel(const Archive& a, const FrontendOptions& opts) {
  const SourceLoc loc{a.path(), "", ""};
  if (!a.has("archive_format")) throw UserError(loc, "not a torch.export archive (it has no archive_format entry)");
  const std::string format = trimmed(a.read("archive_format", kMaxSmallBytes));
  if (format != "pt2") throw UserError(loc, "archive_format is '" + format.substr(0, 40) + "', not pt2");
  if (!a.has("byteorder")) throw UserError(loc, "the archive has no byteorder entry");
  const std::string order = trimmed(a.read("byteorder", kMaxSmallBytes));
  if (order != "little")
    throw UserError(loc, "byteorder is '" + order.substr(0, 40) + "': aotc reads archives written on little-endian machines only");
  std::vector<std::string> models;
  bool aoti = false;
  for (const std::string& n : a.names()) {
    if (n.rfind("models/", 0) == 0 && n.size() > 12 && n.compare(n.size() - 5, 5, ".json") == 0 && n.find('/', 7) == std::string::npos)
      models.push_back(n.substr(7, n.size() - 12));
    aoti = aoti || n.rfind("data/aotinductor/", 0) == 0;
  }
  if (models.empty())
    throw UserError(loc, aoti ? "an AOTInductor package (compiled code, no exported program): aotc compiles the program "
                                "torch.export.save writes"
                              : "the archive holds no exported program (models/<name>.json)");
  std::string list;
  for (const std::string& m : models) list += (list.empty() ? "" : ", ") + m;
  if (!opts.model.empty()) {
    if (std::find(models.begin(), models.end(), opts.model) == models.end())
      throw UserError(loc, "--model " + opts.model + ": the archive holds " + list);
    return opts.model;
  }
  if (models.size() > 1) throw UserError(loc, cat("the archive holds ", models.size(), " programs (", list, "); choose one with --model NAME"));
  return models[0];
}

json program(const Archive& a, const std::string& model) {
  const std::string name = "models/" + model + ".json";
  json ep = parseJson(a, name);
  const SourceLoc loc{a.path(), name, ""};
  const json* v = ep.is_object() && ep.contains("schema_version") ? &ep["schema_version"] : nullptr;
  if (!v || !v->is_object() || !v->contains("major") || !(*v)["major"].is_number_integer())
    throw UserError(loc, "not a serialized ExportedProgram (no schema_version)");
  if ((*v)["major"].get<int64_t>() != kSchemaMajor)
    throw UserError(loc, cat("schema version ", (*v)["major"].dump(), ".", v->value("minor", json(0)).dump(), ": aotc reads major ",
                             kSchemaMajor, " (PyTorch 2.8 to 2.15)"));
  // Note [pt2 schema minors].
  const json minor = v->value("minor", json(0));
  if (!minor.is_number_integer()) throw UserError(loc, "schema_version's minor is not an integer: " + minor.dump().substr(0, 40));
  checkNewerMinorKeys(ep, minor.get<int64_t>(), loc);
  return ep;
}

/// The payload configs (data/weights/<model>_weights_config.json and
/// data/constants/<model>_constants_config.json): fqn -> {dir, meta}.
struct Payload {
  std::string dir;
  json meta;
};
std::map<std::string, Payload> payloads(const Archive& a, const std::string& model) {
  std::map<std::string, Payload> out;
  for (const char* dir : {"data/weights/", "data/constants/"}) {
    const std::string file = std::string(dir) + model + (dir[5] == 'w' ? "_weights_config.json" : "_constants_config.json");
    if (!a.has(file)) continue;
    json cfg = parseJson(a, file);
    if (!cfg.is_object() || !cfg.contains("config") || !cfg["config"].is_object())
      throw UserError(SourceLoc{a.path(), file, ""}, "malformed payload config (no 'config' object)");
    for (auto& [fqn, meta] : cfg["config"].items()) out.emplace(fqn, Payload{dir, meta});
  }
  return out;
}

int64_t asInt(const json& s, const SourceLoc& loc) {
  if (!s.is_object() || !s.contains("as_int") || !s["as_int"].is_number_integer())
    throw UserError(loc, "a stored tensor has a size, stride or offset that is not an integer: " + s.dump().substr(0, 80));
  return s["as_int"].get<int64_t>();
}

/// The tensor a payload describes, read from its record: sizes, strides and
/// storage offset into the record's storage (shared between tensors).
HostTensor readTensor(const Archive& a, const std::string& fqn, const Payload& p, std::map<std::string, std::string>& records) {
  SourceLoc loc{a.path(), fqn, "weight"};
  const json& m = p.meta;
  if (!m.is_object() || !m.contains("path_name") || !m["path_name"].is_string() || !m.contains("tensor_meta"))
    throw UserError(loc, "malformed payload entry");
  if (m.value("use_pickle", false))
    throw UserError(loc, "is stored as a pickle (a tensor subclass), which aotc never unpickles");
  const std::string file = m["path_name"].get<std::string>();
  if (file.empty() || file.find('/') != std::string::npos || file == "..")
    throw UserError(loc, "record name '" + file + "' is not a plain name");
  const json& t = m["tensor_meta"];
  HostTensor h;
  h.dtype = scalarType(t.at("dtype"), loc);
  Ints strides;
  for (const json& s : t.at("sizes")) h.sizes.push_back(asInt(s, loc));
  for (const json& s : t.at("strides")) strides.push_back(asInt(s, loc));
  const int64_t offset = asInt(t.at("storage_offset"), loc);
  if (strides.size() != h.sizes.size()) throw UserError(loc, "strides and sizes differ in length");
  int64_t numel = 1, last = offset;
  for (size_t d = 0; d < h.sizes.size(); ++d) {
    if (h.sizes[d] < 0 || strides[d] < 0 || strides[d] > kMaxExtent) throw UserError(loc, "negative or huge size or stride");
    numel = mulSize(numel, h.sizes[d]);
    if (h.sizes[d] > 0) last = addSize(last, mulSize(h.sizes[d] - 1, strides[d]));
  }
  if (offset < 0 || numel > kMaxElements) throw UserError(loc, "storage offset or element count out of range");
  const std::string record = p.dir + file;
  const int64_t esize = dtypeSize(h.dtype);
  if (numel > 0 && static_cast<uint64_t>(mulSize(last + 1, esize)) > a.size(record))
    throw UserError(loc, cat("record ", record, " holds ", a.size(record), " bytes; the tensor needs ", mulSize(last + 1, esize)));
  auto it = records.find(record);
  if (it == records.end()) it = records.emplace(record, a.read(record, uint64_t{1} << 40)).first;
  const std::string& bytes = it->second;
  h.data.resize(static_cast<size_t>(numel));
  Ints idx(h.sizes.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t at = offset;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides[d];
    const double v = loadElement(h.dtype, reinterpret_cast<const unsigned char*>(bytes.data()) + at * esize);
    if ((h.dtype == DType::I64 || h.dtype == DType::U64) && std::abs(v) > 9007199254740992.0)
      throw UserError(loc, "holds a 64-bit integer beyond 2^53, which aotc's host values cannot hold exactly");
    h.data[static_cast<size_t>(i)] = v;
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < h.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return h;
}

struct Loaded {
  std::string model;
  Program program;
  std::map<std::string, Payload> payloads;
};

// Note [pt2 tied weights]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A parameter shared by two modules (a language model's embedding and
// head) is two parameter inputs of the exported program, one per state_dict
// name, whose records are one storage with the same view.  Eager has one
// tensor there, whose .grad is the sum of both uses' gradients; two graph
// inputs would each get one use's share (and an optimizer would update two
// copies apart).  So inputs of one role (parameter or buffer) whose payloads
// are the same view of one record are one input, named by the first
// (state_dict order: named_parameters()' name), the others its aliases (as
// the FX exporter writes tied weights): grad.<first name>, and the inputs
// may be given under any of the names.
void tieShared(Program& p, const std::map<std::string, Payload>& payloads) {
  std::map<std::string, std::string> first;  // storage and view -> input
  std::map<std::string, std::string> tied;   // input -> the input it is
  for (const Held& h : p.held) {
    auto it = payloads.find(h.input);
    if (h.constant || it == payloads.end() || !it->second.meta.is_object() || !it->second.meta.contains("tensor_meta")) continue;
    const json& m = it->second.meta;
    const json& t = m["tensor_meta"];
    const json key = {it->second.dir, m.value("path_name", json()), t.value("dtype", json()), t.value("sizes", json()),
                      t.value("strides", json()), t.value("storage_offset", json())};
    auto [f, fresh] = first.emplace(key.dump(), h.input);
    if (!fresh) tied[h.input] = f->second;
  }
  if (tied.empty()) return;
  json& inputs = p.doc["inputs"];
  auto entry = [&](const std::string& name) -> json& {
    for (json& in : inputs)
      if (in["name"] == name) return in;
    throw UserError(SourceLoc{"", name, "input"}, "tied input not found");  // held inputs are inputs
  };
  std::map<std::string, std::string> kept;
  for (auto& [dup, into] : tied) {
    json& d = entry(dup);
    json& k = entry(into);
    if (d["role"] != k["role"]) continue;  // a parameter and a buffer on one storage stay two inputs
    k["aliases"].push_back(dup);
    k["requires_grad"] = k["requires_grad"].get<bool>() || d["requires_grad"].get<bool>();
    kept[dup] = into;
  }
  if (kept.empty()) return;
  json rest = json::array();
  for (json& in : inputs)
    if (!kept.count(in["name"].get<std::string>())) rest.push_back(std::move(in));
  inputs = std::move(rest);
  std::erase_if(p.held, [&](const Held& h) { return kept.count(h.input) > 0; });
  auto rename = [&](json& j, auto&& self) -> void {
    if (j.is_object() && j.size() == 1 && j.contains("node") && j["node"].is_string()) {
      if (auto it = kept.find(j["node"].get<std::string>()); it != kept.end()) j["node"] = it->second;
    } else if (j.is_array() || j.is_object()) {
      for (json& x : j) self(x, self);
    }
  };
  for (json& n : p.doc["nodes"]) {
    rename(n["args"], rename);
    if (n.contains("kwargs")) rename(n["kwargs"], rename);
  }
  rename(p.doc["outputs"], rename);
}

Loaded open(const Archive& a, const FrontendOptions& opts) {
  Loaded l;
  l.model = pickModel(a, opts);
  l.program = translate(program(a, l.model), a.path(), opts.train);
  l.payloads = payloads(a, l.model);
  tieShared(l.program, l.payloads);
  if (validName(l.model)) l.program.doc["name"] = l.model;
  return l;
}

}  // namespace

}  // namespace pt2

namespace pt2 {
Model load(const std::string& path, const FrontendOptions& opts);
}

Model loadPt2(const std::string& path, const FrontendOptions& opts) {
  // Type errors anywhere in a malformed program or config are the user's.
  try {
    return pt2::load(path, opts);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed archive: ") + e.what());
  }
}

namespace pt2 {

Model load(const std::string& path, const FrontendOptions& opts) {
  const Archive a(path);
  pt2::Loaded l = pt2::open(a, opts);
  const std::map<std::string, pt2::Payload>& payloads = l.payloads;
  std::map<std::string, HostTensor> weights;
  // Records are read one at a time; a storage shared by several tensors
  // (tied weights, views) is read once and kept while its tensors are read.
  std::map<std::string, std::string> records;
  for (const pt2::Held& h : l.program.held) {
    auto it = payloads.find(h.input);
    if (it == payloads.end())
      throw UserError(SourceLoc{path, h.input, "input"}, "the archive holds no value for it (no entry in its weights or constants config)");
    weights[h.input] = pt2::readTensor(a, h.input, it->second, records);
  }
  records.clear();
  Model m = loadFxDocument(l.program.doc, path, std::move(weights));
  m.format = "pt2";
  return m;
}

}  // namespace pt2

nlohmann::json pt2FxDocument(const std::string& path, const FrontendOptions& opts) {
  try {
    const pt2::Archive a(path);
    return pt2::open(a, opts).program.doc;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{path, "", ""}, std::string("malformed archive: ") + e.what());
  }
}

SourceGraph pt2SourceGraph(const std::string& path, const FrontendOptions& opts) {
  const nlohmann::json doc = pt2FxDocument(path, opts);
  SourceGraph sg;
  sg.name = doc.value("name", "model");
  for (const nlohmann::json& in : doc["inputs"]) {
    SourceNode n;
    n.name = in["name"].get<std::string>();
    n.op = in["role"].get<std::string>();
    n.is_input = true;
    n.loc = SourceLoc{path, n.name, "input"};
    sg.nodes.push_back(std::move(n));
  }
  auto refs = [](const nlohmann::json& j, std::vector<std::string>& out, auto&& self) -> void {
    if (j.is_object() && j.size() == 1 && j.contains("node")) {
      out.push_back(j["node"].get<std::string>());
    } else if (j.is_array() || j.is_object()) {
      for (const nlohmann::json& x : j) self(x, out, self);
    }
  };
  for (const nlohmann::json& j : doc["nodes"]) {
    SourceNode n;
    n.name = j["name"].get<std::string>();
    n.op = j["target"].get<std::string>();
    n.loc = SourceLoc{path, n.name, n.op};
    n.loc.source = j.value("source", std::string());
    n.loc.scope = j.value("module", std::string());
    refs(j["args"], n.inputs, refs);
    if (j.contains("kwargs")) refs(j["kwargs"], n.inputs, refs);
    if (n.op != "getitem" && !isSupportedFxTarget(n.op)) n.unsupported = "unsupported op";
    sg.nodes.push_back(std::move(n));
  }
  refs(doc["outputs"], sg.outputs, refs);
  return sg;
}

// Note [Exported targets]
// ~~~~~~~~~~~~~~~~~~~~~~~
// testdata/pt2/exported_targets.txt lists every target torch.export writes
// for the zoo and the .pt2 test programs in both dialects
// (scripts/pt2_targets.py); frontend_completeness_test asks this function
// about each, and ctest pt2_targets fails on a target PyTorch writes that
// the list lacks.  The answer follows Translator::node (translate.cpp): what
// the translation drops or inlines itself, then the FX tables.
bool isSupportedPt2Target(const std::string& spelling) {
  std::string t = spelling;
  if (t.rfind("torch.ops.", 0) == 0) t = t.substr(10);
  if (t == "aten._assert_tensor_metadata.default" || t == "aten._assert_scalar.default" ||
      t == "higher_order.wrap_with_set_grad_enabled" || t == "higher_order.wrap_with_autocast" || t == "higher_order.cond")
    return true;
  if (t.rfind("higher_order.", 0) == 0) return false;
  return isSupportedFxTarget(t);
}

}  // namespace aotc
