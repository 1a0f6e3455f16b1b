//===- safetensors.h - Read and write safetensors files ----------*- C++ -*-===//
//
// Format: 8-byte little-endian header length N, N bytes of JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
// then the raw little-endian data.  Names are kept in sorted order on write so
// that files are byte-identical run to run.
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <string>

#include "aotc/ir/host_tensor.h"

namespace aotc {

struct TensorInfo {
  DType dtype;
  Ints shape;
};

/// One element of dtype `d` in its little-endian storage bytes, as double
/// (and back, rounding to the dtype).  Shared by every reader of raw buffers.
double loadElement(DType d, const unsigned char* p);
void storeElement(DType d, unsigned char* p, double x);

/// Header only (no data read): name -> dtype/shape.  Throws UserError naming `path`.
std::map<std::string, TensorInfo> readSafetensorsHeader(const std::string& path);
/// Whole file, elements converted to double.
std::map<std::string, HostTensor> readSafetensors(const std::string& path);
/// Writes every tensor in its own dtype.
void writeSafetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors);
/// Writes `to` holding tensors of `from` byte for byte, renamed: names maps
/// each new name to its name in `from` (no conversion, streamed).
/// `extra` are written after them (names must differ).
void copySafetensors(const std::string& from, const std::string& to, const std::map<std::string, std::string>& names,
                     const std::map<std::string, HostTensor>& extra = {});

}  // namespace aotc
