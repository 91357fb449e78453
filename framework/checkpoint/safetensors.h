// safetensors: read and write the HF safetensors format (https://github.com/huggingface/safetensors)
// without the Rust library. Layout: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data
// buffer. Reading validates every field and bound (a corrupt file is a UserError naming the file and
// tensor, never a crash); writing follows the reference layout (keys sorted, header padded with
// spaces to a multiple of 8, tensors contiguous little-endian in key order) and is atomic.
#pragma once
#include <filesystem>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

namespace unif::framework {

/// Tensors by name, ordered by name (the order safetensors writes them).
using TensorMap = std::map<std::string, torch::Tensor>;

/// The content of a safetensors file: tensors (CPU, contiguous) and the `__metadata__` strings.
struct SafetensorsFile {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads `file`. Supported dtypes: F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL.
/// Throws unif::UserError (naming the file and the tensor) on any malformed content.
SafetensorsFile read_safetensors(const std::filesystem::path& file);

/// Tensor shapes by name.
using TensorShapes = std::map<std::string, std::vector<int64_t>>;

/// The shape of every tensor of `file`, from its header alone (checked as read_safetensors checks
/// it; no tensor data is read or allocated).
TensorShapes read_safetensors_shapes(const std::filesystem::path& file);

/// Writes `tensors` (any device/layout: copied to contiguous CPU) to `file` through a temporary
/// file renamed into place. An empty `metadata` writes {"format": "pt"} as HF/torch do.
/// Throws unif::UserError on an unsupported dtype, a sparse tensor or an IO failure.
void write_safetensors(const std::filesystem::path& file, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace unif::framework
