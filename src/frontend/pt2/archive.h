//===- pt2/archive.h - A .pt2 zip archive, read through libzip ---*- C++ -*-===//
//
// The archive torch.export.save writes (torch/export/pt2_archive/_package.py):
// a stored zip whose entries all sit under one top-level folder.  Read
// through Debian's libzip (ZIP64, CRC checked on every read), never by hand;
// entries are read one at a time, so the weights of a large model are never
// all held as bytes at once.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aotc::pt2 {

class Archive {
 public:
  /// Opens `path`; a missing, truncated or corrupt zip, an entry name that
  /// leaves the archive's folder, or entries under several top-level
  /// folders are UserErrors naming the file.
  explicit Archive(const std::string& path);
  ~Archive();
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  const std::string& path() const { return path_; }
  /// The entry names, relative to the top-level folder, sorted.
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  /// The entry's uncompressed size in bytes.
  uint64_t size(const std::string& name) const;
  /// The whole entry; a UserError when it is missing, larger than
  /// `maxBytes`, or does not read back whole (a bad CRC, a truncated file).
  std::string read(const std::string& name, uint64_t maxBytes) const;

 private:
  struct Zip;
  std::string path_;
  std::unique_ptr<Zip> zip_;
  std::map<std::string, uint64_t> entries_;  ///< relative name -> libzip index
  uint64_t fileSize_ = 0;
};

}  // namespace aotc::pt2
