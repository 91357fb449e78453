// torch_bin: reads `pytorch_model.bin` as written by torch.save (zip format, PyTorch >= 1.6):
// `<top>/data.pkl` (a protocol-2 pickle of an OrderedDict of tensors) and `<top>/data/<key>`
// storages. LibTorch 1.13's torch::pickle_load aborts on collections.OrderedDict, so this is an
// own, bounds-checked reader: libzip for the archive, a small pickle-VM subset for data.pkl.
// Not supported: the legacy (pre-1.6, non-zip) format, nested modules/objects other than tensors.
#pragma once
#include <filesystem>

#include "framework/checkpoint/safetensors.h"

namespace unif::framework {

/// Reads every tensor of a torch.save'd state dict as a CPU tensor. As with torch.load, a tensor is
/// a view of its storage with the saved offset and strides (so it may be non-contiguous, and
/// tensors saved over one storage share its memory); nothing is copied. Throws unif::UserError
/// naming the file on a missing file, a non-zip / truncated archive, an entry whose recorded size
/// disagrees with its data, an unsupported pickle opcode or global, or out-of-range storage.
TensorMap read_torch_bin(const std::filesystem::path& file);

/// The shape of every tensor, with every check of read_torch_bin but without reading (or
/// allocating) the storages' data.
TensorShapes read_torch_bin_shapes(const std::filesystem::path& file);

}  // namespace unif::framework
