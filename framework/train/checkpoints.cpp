// Checkpoints: see checkpoints.h.
#include "framework/train/checkpoints.h"

#include <algorithm>
#include <fstream>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

#include "framework/checkpoint/atomic_file.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/common/error.h"
#include "framework/model/model_dir.h"

namespace unif::framework {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t checkpoint_step(const fs::path& dir) {
  const auto name = dir.filename().string();
  if (name.size() <= 5 || name.rfind("step-", 0) != 0) return -1;
  if (name.find_first_not_of("0123456789", 5) != std::string::npos || name.size() > 23) return -1;
  return std::stoll(name.substr(5));
}

std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const auto step = checkpoint_step(e.path());
    if (step >= 0 && is_complete(e.path())) out.emplace_back(step, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path newest_complete_checkpoint(const fs::path& root) {
  auto all = complete_checkpoints(root);
  return all.empty() ? fs::path() : all.back().second;
}

void prune_checkpoints(const fs::path& root, int64_t keep) {
  auto all = complete_checkpoints(root);
  std::error_code ec;
  while (static_cast<int64_t>(all.size()) > keep) {
    fs::remove_all(all.front().second, ec);
    all.erase(all.begin());
  }
}

void require_complete(const fs::path& dir, const char* what) {
  if (!is_complete(dir))
    throw UserError(dir.string() + ": the " + std::string(what) +
                    " save left no complete directory (no COMPLETE marker): save_model must write the model "
                    "files, call extra(tmp) for checkpoints, write COMPLETE last and rename the directory into "
                    "place (docs/cpp-api.md)");
}

int64_t trim_metrics(const fs::path& file, int64_t step) {
  std::ifstream in(file);
  if (!in) return 0;
  std::vector<std::string> keep;
  int64_t dropped = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // A test line is written once, at the end of a run: a resumed run writes its own.
    const bool test = j.is_object() && j.value("split", std::string()) == "test";
    if (!test && j.is_object() && j.contains("step") && j.at("step").is_number_integer() &&
        j.at("step").get<int64_t>() <= step)
      keep.push_back(line);
    else
      ++dropped;
  }
  in.close();
  if (dropped > 0)
    detail::write_file_atomic(file, [&](std::ostream& out) {
      for (const auto& l : keep) out << l << "\n";
    });
  return dropped;
}

void write_checkpoint_files(const fs::path& tmp, const CheckpointContent& c) {
  write_safetensors(tmp / "optimizer.safetensors", c.optimizer);
  write_safetensors(tmp / "rng.safetensors", {{"torch_cpu", c.rng}});
  if (!c.strategy.empty()) write_safetensors(tmp / "strategy.safetensors", c.strategy);
  detail::write_text_file_atomic(tmp / "trainer_state.json", c.state.to_json().dump(2) + "\n");
}

CheckpointContent read_checkpoint_files(const fs::path& dir, bool state_only) {
  CheckpointContent c;
  const fs::path state_file = dir / "trainer_state.json";
  try {
    std::ifstream f(state_file);
    c.state = TrainerState::from_json(json::parse(f));
  } catch (const json::exception& e) {
    throw UserError(state_file.string() + ": invalid trainer state (" + e.what() + ")");
  }
  if (state_only) return c;
  c.optimizer = read_safetensors(dir / "optimizer.safetensors").tensors;
  const auto rng = read_safetensors(dir / "rng.safetensors").tensors;
  const auto it = rng.find("torch_cpu");
  if (it == rng.end()) throw UserError((dir / "rng.safetensors").string() + ": no 'torch_cpu' generator state");
  c.rng = it->second;
  if (fs::exists(dir / "strategy.safetensors")) c.strategy = read_safetensors(dir / "strategy.safetensors").tensors;
  return c;
}

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace unif::framework
