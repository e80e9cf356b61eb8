// Checkpoints: tt::save / tt::load in the safetensors format, readable by Hugging Face's
// `safetensors` library and by PyTorch through it.
//
//   [8 bytes] N, a little-endian u64    [N bytes] UTF-8 JSON header    [rest] raw tensor data
//   {"__metadata__": {"epoch": "3"},
//    "fc1.weight": {"dtype": "F32", "shape": [256, 784], "data_offsets": [0, 802816]}, ...}
//
// Offsets are relative to the first byte after the header; data is little-endian, row-major,
// packed. tinytorch reads and writes the dtypes F32, F64, I64, BOOL and BF16 (torch.bfloat16's bits;
// other safetensors dtypes such as F16 are refused with a clear error).
//
//   tt::save(*model, "model.safetensors", {{"epoch", "3"}});
//   tt::load(*model, "model.safetensors");              // into a module: same names and shapes
//   tt::nn::StateDict sd = tt::load("model.safetensors");
//
// Saving writes a temporary file beside the target, flushes it to disk and renames it over the
// target: a crash or an error never leaves a half-written checkpoint (at worst a stray
// "<path>.tmp-*" file after a crash; on an error it is removed), and the old file stays whole.
// Loading treats the file as hostile: every rule of Note [safetensors validation]
// (tinytorch/io/header.cpp) is checked before any tensor is allocated, and a truncated,
// corrupted or malicious file gets a tt::IOError naming the path, the rule and the values.
// Not here: memory-mapping, lazy loading of single tensors, sharded checkpoints.
#pragma once

#include <map>
#include <string>

#include "tinytorch/nn/module.h"

namespace tt {

// Writes `tensors` (in their order) and `metadata` (the header's "__metadata__") to `path`.
// Tensors may be non-contiguous or on the GPU (they are packed and copied to the host first).
// Names must be non-empty UTF-8 and must not be "__metadata__"; undefined tensors are refused
// (tt::Error). File-system failures throw tt::IOError with the path and the system's reason.
void save(const nn::StateDict& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
// Saves module.state_dict(): every parameter and buffer under its dotted name.
void save(const nn::Module& module, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a safetensors file into CPU tensors, in the order the header lists them.
// Throws tt::IOError for a missing, unreadable, truncated, corrupted or hostile file.
nn::StateDict load(const std::string& path);
// Reads `path` and copies it into `module` (Module::load_state_dict: dtypes and devices are
// converted, shapes must match; strict = false tolerates missing and unexpected names and
// reports them). A file error (tt::IOError) or a mismatch (load_state_dict's tt::Error or
// tt::ShapeError) leaves the module exactly as it was.
nn::LoadResult load(nn::Module& module, const std::string& path, bool strict = true);

// The header's "__metadata__" (empty when there is none). The header is fully validated against
// the file's size; tensor data is not read.
std::map<std::string, std::string> load_metadata(const std::string& path);

}  // namespace tt
