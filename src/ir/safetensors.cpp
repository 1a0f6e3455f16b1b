//===- safetensors.cpp ----------------------------------------------------===//
#include "aotc/ir/safetensors.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace aotc {

namespace {

using json = nlohmann::json;

// Sanity bound: no header we produce or accept is larger than this.
constexpr uint64_t kMaxHeader = 100u << 20;

struct Parsed {
  std::map<std::string, TensorInfo> info;
  std::map<std::string, std::pair<uint64_t, uint64_t>> offsets;
  uint64_t data_start = 0;
  uint64_t file_size = 0;
};

Parsed parseHeader(const std::string& path, std::ifstream& f) {
  auto fail = [&](const std::string& m) -> UserError { return UserError(SourceLoc{path, "", ""}, m); };
  if (!f) throw fail("cannot open file");
  f.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  unsigned char lenb[8];
  if (size < 8 || !f.read(reinterpret_cast<char*>(lenb), 8)) throw fail("not a safetensors file (too short)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | lenb[i];
  if (n > kMaxHeader || n > size - 8) throw fail("not a safetensors file (header length " + std::to_string(n) + ")");
  std::string hdr(n, '\0');
  f.read(hdr.data(), static_cast<std::streamsize>(n));
  json j;
  try {
    j = json::parse(hdr);
  } catch (const json::exception& e) {
    throw fail(std::string("malformed safetensors header: ") + e.what());
  }
  if (!j.is_object()) throw fail("malformed safetensors header: not an object");
  Parsed p;
  p.data_start = 8 + n;
  p.file_size = size;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") continue;
    try {
      auto d = dtypeFromSafetensorsName(v.at("dtype").get<std::string>());
      if (!d) throw fail("tensor '" + name + "': unsupported dtype " + v.at("dtype").dump());
      // Integers only, checked before conversion: nlohmann converts a float
      // like 9.2e20 to int64 with undefined behaviour (found by libFuzzer).
      auto naturals = [&](const char* key) {
        const json& a = v.at(key);
        if (!a.is_array()) throw fail("tensor '" + name + "': " + key + " must be an array of non-negative integers");
        for (auto& x : a)
          if (!x.is_number_unsigned() && !(x.is_number_integer() && x.get<int64_t>() >= 0))
            throw fail("tensor '" + name + "': " + key + " must hold non-negative integers, got " + x.dump());
        return a;
      };
      Ints shape;
      for (auto& x : naturals("shape")) {
        if (x.get<uint64_t>() > (uint64_t{1} << 40)) throw fail("tensor '" + name + "': bad shape");
        shape.push_back(x.get<int64_t>());
      }
      auto off = naturals("data_offsets").get<std::vector<uint64_t>>();
      int64_t numel = 1;
      for (int64_t s : shape) {
        if (s < 0 || (s > 0 && numel > (int64_t{1} << 40) / s)) throw fail("tensor '" + name + "': bad shape");
        numel *= s;
      }
      // Overflow-safe: data_start <= size holds, so compare off[1] with the
      // room left instead of adding to data_start (a near-2^64 offset
      // wrapped the sum and read the tensor from inside the header).
      if (off.size() != 2 || off[0] > off[1] || off[1] > size - p.data_start ||
          off[1] - off[0] != static_cast<uint64_t>(numel * dtypeSize(*d)))
        throw fail("tensor '" + name + "': data offsets do not match its shape or the file size");
      p.info[name] = TensorInfo{*d, shape};
      p.offsets[name] = {off[0], off[1]};
    } catch (const json::exception& e) {
      throw fail("tensor '" + name + "': malformed entry: " + e.what());
    }
  }
  return p;
}

/// Opens `path` and writes the 8-byte length and the header, padded so the
/// data starts 8-byte aligned (as the reference writer does).
std::ofstream writeHeader(const std::string& path, const json& hdr) {
  std::string h = hdr.dump();
  while ((h.size() + 8) % 8) h += ' ';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError(SourceLoc{path, "", ""}, "cannot write file");
  unsigned char lenb[8];
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) lenb[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  f.write(reinterpret_cast<const char*>(lenb), 8);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  return f;
}

}  // namespace

double loadElement(DType d, const unsigned char* p) {
  switch (d) {
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::F16: { _Float16 v; std::memcpy(&v, p, 2); return static_cast<double>(v); }
    case DType::BF16: {
      uint32_t u = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
      float v;
      std::memcpy(&v, &u, 4);
      return v;
    }
    case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Bool: return p[0] ? 1.0 : 0.0;
    case DType::I8: return static_cast<int8_t>(p[0]);
    case DType::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::U8: return p[0];
    case DType::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::U64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  }
  return 0;
}

void storeElement(DType d, unsigned char* p, double x) {
  x = roundTo(d, x);
  switch (d) {
    case DType::F32: { float v = static_cast<float>(x); std::memcpy(p, &v, 4); return; }
    case DType::F64: std::memcpy(p, &x, 8); return;
    case DType::F16: { _Float16 v = static_cast<_Float16>(static_cast<float>(x)); std::memcpy(p, &v, 2); return; }
    case DType::BF16: {
      float v = static_cast<float>(roundTo(DType::BF16, x));
      uint32_t u;
      std::memcpy(&u, &v, 4);
      p[0] = static_cast<unsigned char>((u >> 16) & 0xff);
      p[1] = static_cast<unsigned char>(u >> 24);
      return;
    }
    case DType::I64: {  // x is in range: roundTo saturates
      int64_t v = x >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(x);
      std::memcpy(p, &v, 8);
      return;
    }
    case DType::I32: { int32_t v = static_cast<int32_t>(x); std::memcpy(p, &v, 4); return; }
    case DType::Bool: p[0] = x != 0.0; return;
    // x is in range: roundTo wrapped it.
    case DType::I8: p[0] = static_cast<unsigned char>(static_cast<int8_t>(x)); return;
    case DType::I16: { int16_t v = static_cast<int16_t>(x); std::memcpy(p, &v, 2); return; }
    case DType::U8: p[0] = static_cast<unsigned char>(x); return;
    case DType::U16: { uint16_t v = static_cast<uint16_t>(x); std::memcpy(p, &v, 2); return; }
    case DType::U32: { uint32_t v = static_cast<uint32_t>(x); std::memcpy(p, &v, 4); return; }
    case DType::U64: { uint64_t v = x >= 0x1p64 ? UINT64_MAX : static_cast<uint64_t>(x); std::memcpy(p, &v, 8); return; }
  }
}

std::map<std::string, TensorInfo> readSafetensorsHeader(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return parseHeader(path, f).info;
}

std::map<std::string, HostTensor> readSafetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Parsed p = parseHeader(path, f);
  std::map<std::string, HostTensor> out;
  for (auto& [name, info] : p.info) {
    auto [b, e] = p.offsets[name];
    std::vector<unsigned char> buf(e - b);
    f.seekg(static_cast<std::streamoff>(p.data_start + b));
    f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    HostTensor t = HostTensor::zeros(info.dtype, info.shape);
    int64_t es = dtypeSize(info.dtype);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = loadElement(info.dtype, buf.data() + i * static_cast<size_t>(es));
    out.emplace(name, std::move(t));
  }
  return out;
}

namespace {
/// Appends in-memory tensors to a header being built (data after `off`).
void addEntries(json& hdr, uint64_t& off, const std::map<std::string, HostTensor>& tensors) {
  for (auto& [name, t] : tensors) {
    AOTC_CHECK(!hdr.contains(name), "safetensors: '", name, "' written twice");
    uint64_t bytes = static_cast<uint64_t>(t.numel() * dtypeSize(t.dtype));
    hdr[name] = {{"dtype", dtypeSafetensorsName(t.dtype)}, {"shape", t.sizes}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
}

/// The tensors' bytes, in map order (as addEntries laid them out).
std::vector<unsigned char> encode(const std::map<std::string, HostTensor>& tensors) {
  std::vector<unsigned char> data;
  for (auto& [name, t] : tensors) {
    const size_t es = static_cast<size_t>(dtypeSize(t.dtype)), at = data.size();
    data.resize(at + t.data.size() * es);
    for (size_t i = 0; i < t.data.size(); ++i) storeElement(t.dtype, data.data() + at + i * es, t.data[i]);
  }
  return data;
}
}  // namespace

void writeSafetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors) {
  json hdr = json::object();
  uint64_t off = 0;
  addEntries(hdr, off, tensors);
  const std::vector<unsigned char> data = encode(tensors);
  std::ofstream f = writeHeader(path, hdr);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!f) throw UserError(SourceLoc{path, "", ""}, "write failed");
}

void copySafetensors(const std::string& from, const std::string& to, const std::map<std::string, std::string>& names,
                     const std::map<std::string, HostTensor>& extra) {
  std::ifstream f(from, std::ios::binary);
  Parsed p = parseHeader(from, f);
  json hdr = json::object();
  uint64_t off = 0;
  std::vector<std::pair<std::string, std::string>> order(names.begin(), names.end());  // by new name: sorted
  for (auto& [dst, src] : order) {
    auto it = p.info.find(src);
    if (it == p.info.end()) throw UserError(SourceLoc{from, src, ""}, "no tensor of this name");
    auto [b, e] = p.offsets.at(src);
    hdr[dst] = {{"dtype", dtypeSafetensorsName(it->second.dtype)}, {"shape", it->second.shape}, {"data_offsets", {off, off + (e - b)}}};
    off += e - b;
  }
  addEntries(hdr, off, extra);
  std::ofstream o = writeHeader(to, hdr);
  std::vector<char> buf(1 << 20);
  for (auto& [dst, src] : order) {
    auto [b, e] = p.offsets.at(src);
    f.seekg(static_cast<std::streamoff>(p.data_start + b));
    for (uint64_t left = e - b; left > 0;) {
      std::streamsize k = static_cast<std::streamsize>(std::min<uint64_t>(left, buf.size()));
      if (!f.read(buf.data(), k)) throw UserError(SourceLoc{from, src, ""}, "read failed");
      o.write(buf.data(), k);
      left -= static_cast<uint64_t>(k);
    }
  }
  const std::vector<unsigned char> data = encode(extra);
  o.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!o) throw UserError(SourceLoc{to, "", ""}, "write failed");
}

}  // namespace aotc
