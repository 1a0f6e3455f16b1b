//===- pt2/archive.cpp - A .pt2 zip archive, read through libzip ------------===//
#include "archive.h"

#include <zip.h>

#include <algorithm>
#include <filesystem>

#include "aotc/support/diag.h"

namespace aotc::pt2 {

struct Archive::Zip {
  zip_t* z = nullptr;
  ~Zip() {
    if (z) zip_discard(z);
  }
};

namespace {

/// Whether an entry name stays inside the archive's folder: relative, no
/// `..` or empty component, no backslash or NUL.
bool safeName(const std::string& n) {
  if (n.empty() || n[0] == '/' || n.find('\\') != std::string::npos || n.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= n.size()) {
    size_t end = n.find('/', start);
    if (end == std::string::npos) end = n.size();
    std::string part = n.substr(start, end - start);
    // A trailing slash (a folder entry) leaves one empty last component.
    if (part == ".." || part == "." || (part.empty() && end != n.size())) return false;
    start = end + 1;
  }
  return true;
}

std::string zipMessage(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string m = zip_error_strerror(&e);
  zip_error_fini(&e);
  return m;
}

}  // namespace

Archive::Archive(const std::string& path) : path_(path), zip_(std::make_unique<Zip>()) {
  const SourceLoc loc{path, "", ""};
  int err = 0;
  // ZIP_CHECKCONS: the central directory must agree with the local headers
  // (a truncated or spliced file is refused here, not half read).
  zip_->z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!zip_->z) {
    if (err == ZIP_ER_NOENT) throw UserError(loc, "file does not exist");
    if (err == ZIP_ER_NOZIP) throw UserError(loc, "not a zip archive (a .pt2 file is the zip torch.export.save writes)");
    throw UserError(loc, "cannot read the archive: " + zipMessage(err));
  }
  {
    std::error_code ec;
    fileSize_ = std::filesystem::file_size(path, ec);
  }
  const zip_int64_t n = zip_get_num_entries(zip_->z, 0);
  std::string root;
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* raw = zip_get_name(zip_->z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (!raw) throw UserError(loc, "cannot read the archive's entry names");
    const std::string name = raw;
    const size_t base = name.find_last_of('/');
    if (name.substr(base == std::string::npos ? 0 : base + 1) == "serialized_exported_program.json")
      throw UserError(loc, "written in the legacy layout of PyTorch before 2.8 (serialized_exported_program.json with pickled "
                           "state dicts, which aotc never unpickles); load it there and torch.export.save it with PyTorch 2.8 or newer");
    if (!safeName(name)) throw UserError(loc, "entry '" + name + "' leaves the archive's folder (an absolute path or '..')");
    const size_t slash = name.find('/');
    if (slash == std::string::npos || slash == 0)
      throw UserError(loc, "entry '" + name + "' is not under the archive's top-level folder");
    const std::string top = name.substr(0, slash);
    if (root.empty()) root = top;
    if (top != root) throw UserError(loc, "entries under two top-level folders ('" + root + "', '" + top + "')");
    const std::string rel = name.substr(slash + 1);
    if (rel.empty() || rel.back() == '/') continue;  // a folder entry
    if (!entries_.emplace(rel, static_cast<uint64_t>(i)).second) throw UserError(loc, "entry '" + name + "' appears twice");
  }
  if (entries_.empty()) throw UserError(loc, "the archive holds no files");
}

Archive::~Archive() = default;

std::vector<std::string> Archive::names() const {
  std::vector<std::string> v;
  for (const auto& [n, i] : entries_) v.push_back(n);
  return v;
}

uint64_t Archive::size(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw UserError(SourceLoc{path_, name, ""}, "missing from the archive");
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(zip_->z, it->second, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw UserError(SourceLoc{path_, name, ""}, "cannot read the entry's size");
  return st.size;
}

std::string Archive::read(const std::string& name, uint64_t maxBytes) const {
  const SourceLoc loc{path_, name, ""};
  const uint64_t n = size(name);
  if (n > maxBytes) throw UserError(loc, cat("entry of ", n, " bytes is larger than the ", maxBytes, " aotc reads"));
  // torch.export.save stores entries uncompressed; a compressed one may
  // expand, but not without bound (a zip bomb is refused before it is read).
  if (n > std::max<uint64_t>(fileSize_ * 16, uint64_t{64} << 20))
    throw UserError(loc, cat("entry of ", n, " bytes expands to more than 16 times the archive's ", fileSize_, " bytes"));
  zip_file_t* f = zip_fopen_index(zip_->z, entries_.at(name), 0);
  if (!f) throw UserError(loc, "cannot open the entry: " + std::string(zip_strerror(zip_->z)));
  std::string out(n, '\0');
  uint64_t got = 0;
  while (got < n) {
    const zip_int64_t r = zip_fread(f, out.data() + got, n - got);
    if (r <= 0) break;
    got += static_cast<uint64_t>(r);
  }
  // Reading past the end makes libzip check the CRC of what it read.
  char extra;
  const zip_int64_t tail = got == n ? zip_fread(f, &extra, 1) : -1;
  std::string why = tail != 0 ? zip_file_strerror(f) : "";
  zip_fclose(f);
  if (got != n || tail != 0)
    throw UserError(loc, cat("entry does not read back whole (", got, " of ", n, " bytes", why.empty() ? "" : ": " + why, ")"));
  return out;
}

}  // namespace aotc::pt2
