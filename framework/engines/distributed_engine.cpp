// DistributedEngine: this rank's slice through the local engine, then the collectives that make a
// pass and a step global. See distributed_engine.h for the contract.
#include "framework/engines/distributed_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <stdexcept>

#include "framework/common/clock.h"
#include "framework/engines/coupled_pass.h"
#include "framework/engines/data_parallel.h"

namespace unif::framework {

namespace {

constexpr int64_t kSlots = 8;  // per gathered tensor: defined, ndim, then up to 6 dims

// Per-rank pieces (rows shards[r].size each) of up to three tensors, gathered into global batch
// order. `local[k]` is undefined on a rank with an empty slice; its trailing shape comes from the
// ranks that have one. All are sent as float32. Tensors k with free_rows[k] may have any number of
// rows per rank (masked_lm's logits: one row per masked token), taken as each rank declares them.
std::vector<torch::Tensor> gather_rows(ProcessGroup& group, const std::vector<torch::Tensor>& local,
                                       const std::vector<Shard>& shards, const std::vector<bool>& free_rows = {}) {
  const auto k_count = static_cast<int64_t>(local.size());
  const auto world = group.size();
  auto desc = torch::zeros({k_count * kSlots}, torch::kInt64);
  auto d = desc.accessor<int64_t, 1>();
  for (int64_t k = 0; k < k_count; ++k) {
    const auto& t = local[static_cast<size_t>(k)];
    if (!t.defined()) continue;
    if (t.dim() < 1 || t.dim() > kSlots - 2)
      throw std::logic_error("DistributedEngine: cannot gather a tensor of this rank");
    d[k * kSlots] = 1;
    d[k * kSlots + 1] = t.dim();
    for (int64_t i = 0; i < t.dim(); ++i) d[k * kSlots + 2 + i] = t.size(i);
  }
  const auto descs = group.all_gather(desc);

  // Trailing shape of each tensor from the first rank that has it.
  std::vector<std::vector<int64_t>> trailing(static_cast<size_t>(k_count));
  std::vector<bool> present(static_cast<size_t>(k_count), false);
  for (int64_t k = 0; k < k_count; ++k)
    for (int64_t r = 0; r < world && !present[static_cast<size_t>(k)]; ++r) {
      auto a = descs[static_cast<size_t>(r)].accessor<int64_t, 1>();
      if (a[k * kSlots] == 0) continue;
      present[static_cast<size_t>(k)] = true;
      for (int64_t i = 1; i < a[k * kSlots + 1]; ++i) trailing[static_cast<size_t>(k)].push_back(a[k * kSlots + 2 + i]);
    }
  // rows_of[k][r]: the rows rank r sends of tensor k; max_rows[k]: the padded size.
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(k_count),
                                            std::vector<int64_t>(static_cast<size_t>(world), 0));
  std::vector<int64_t> max_rows(static_cast<size_t>(k_count), 0);
  for (int64_t k = 0; k < k_count; ++k)
    for (int64_t r = 0; r < world; ++r) {
      auto a = descs[static_cast<size_t>(r)].accessor<int64_t, 1>();
      const auto rows = shards[static_cast<size_t>(r)].size;
      const bool free = static_cast<size_t>(k) < free_rows.size() && free_rows[static_cast<size_t>(k)];
      if (present[static_cast<size_t>(k)] && rows > 0 && (a[k * kSlots] == 0 || (!free && a[k * kSlots + 2] != rows)))
        throw std::logic_error("DistributedEngine: rank " + std::to_string(r) + " returned " +
                               std::to_string(a[k * kSlots + 2]) + " rows for a slice of " + std::to_string(rows));
      const int64_t sent = a[k * kSlots] == 0 ? 0 : a[k * kSlots + 2];
      rows_of[static_cast<size_t>(k)][static_cast<size_t>(r)] = sent;
      max_rows[static_cast<size_t>(k)] = std::max(max_rows[static_cast<size_t>(k)], sent);
    }

  // One flat float32 buffer per rank: each present tensor padded to the largest piece.
  std::vector<int64_t> row_numel(static_cast<size_t>(k_count), 1);
  std::vector<torch::Tensor> pieces;
  for (int64_t k = 0; k < k_count; ++k) {
    if (!present[static_cast<size_t>(k)]) continue;
    for (auto s : trailing[static_cast<size_t>(k)]) row_numel[static_cast<size_t>(k)] *= s;
    auto padded = torch::zeros({max_rows[static_cast<size_t>(k)] * row_numel[static_cast<size_t>(k)]}, torch::kFloat32);
    const auto& t = local[static_cast<size_t>(k)];
    if (t.defined() && t.numel() > 0)
      padded.narrow(0, 0, t.numel()).copy_(t.detach().to(torch::kCPU, torch::kFloat32).reshape({-1}));
    pieces.push_back(padded);
  }
  std::vector<torch::Tensor> out(static_cast<size_t>(k_count));
  if (pieces.empty()) return out;
  const auto all = group.all_gather(torch::cat(pieces));
  for (int64_t k = 0, offset = 0; k < k_count; ++k) {
    if (!present[static_cast<size_t>(k)]) continue;
    const auto n = row_numel[static_cast<size_t>(k)];
    std::vector<torch::Tensor> parts;
    for (int64_t r = 0; r < world; ++r) {
      const auto rows = rows_of[static_cast<size_t>(k)][static_cast<size_t>(r)];
      std::vector<int64_t> shape{rows};
      for (auto s : trailing[static_cast<size_t>(k)]) shape.push_back(s);
      parts.push_back(all[static_cast<size_t>(r)].narrow(0, offset, rows * n).view(shape));
    }
    out[static_cast<size_t>(k)] = torch::cat(parts, 0);
    offset += max_rows[static_cast<size_t>(k)] * n;
  }
  return out;
}

// The tensors' values as rank `root`'s, one broadcast per dtype and device (flattened, on the
// tensors' device: Gloo for CPU, NCCL for GPUs).
void broadcast_flat(ProcessGroup& group, const std::vector<torch::Tensor>& tensors) {
  std::map<std::pair<int, std::string>, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors)
    if (t.defined() && t.numel() > 0) by_dtype[{static_cast<int>(t.scalar_type()), t.device().str()}].push_back(t);
  torch::NoGradGuard no_grad;
  for (auto& [_, ts] : by_dtype) {
    std::vector<torch::Tensor> flat_parts;
    for (const auto& t : ts) flat_parts.push_back(t.detach().reshape({-1}));
    std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
    group.broadcast(flat, 0);
    int64_t offset = 0;
    for (auto& t : ts) {
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace

DistributedEngine::DistributedEngine(std::shared_ptr<ProcessGroup> group, std::shared_ptr<models::TaskModel> model,
                                     std::unique_ptr<GradientEngine> local, DistributedOptions options)
    : group_(std::move(group)), model_(std::move(model)), local_(std::move(local)), options_(options) {
  if (!group_ || !model_ || !local_)
    throw std::invalid_argument("DistributedEngine: group, model and local engine are required");
  params_ = model_->parameters();
  parameters_loaded();
}

void DistributedEngine::parameters_loaded() {
  std::vector<torch::Tensor> all = params_;
  for (const auto& b : model_->buffers()) all.push_back(b);
  broadcast_flat(*group_, all);
  local_->parameters_loaded();
}

PassResult DistributedEngine::run(const models::Batch& batch, const torch::Tensor& delta, double scale,
                                  bool want_delta_grad) {
  return run_custom(batch, task_pass(delta, scale, want_delta_grad));
}

PassResult DistributedEngine::run_custom(const models::Batch& batch, const PassRequest& request) {
  if (model_->couples_examples()) return run_coupled(*this, *model_, batch, request);
  const auto shards = shard_batch(batch.size(), group_->size());
  const Shard mine = shards[static_cast<size_t>(group_->rank())];
  // The local engine runs even on an empty slice (a last batch smaller than the ranks): it then
  // computes nothing but still takes the per-pass draws from the global generator (dropout seeds),
  // so every rank's generator stays where rank 0's is, which is the state a checkpoint keeps.
  PassRequest req = request;
  if (req.delta.defined()) req.delta = req.delta.narrow(0, mine.begin, mine.size);
  if (request.loss_fn) {
    auto fn = request.loss_fn;
    const int64_t offset = mine.begin;
    req.loss_fn = [fn, offset](const models::ModelOutput& out, int64_t first) { return fn(out, offset + first); };
  }
  if (request.pair_loss_fn) {
    auto fn = request.pair_loss_fn;
    const int64_t offset = mine.begin;
    req.pair_loss_fn = [fn, offset](const models::ModelOutput& a, const models::ModelOutput& b, int64_t first) {
      return fn(a, b, offset + first);
    };
  }
  const PassResult local = local_->run_custom(slice_batch(batch, mine), req);

  if (options_.separate_waits) {
    const auto w0 = Clock::now();
    group_->barrier();
    timing_.wait_s += seconds_since(w0);
  }
  const auto t0 = Clock::now();
  auto sums =
      torch::tensor({local.loss_sum, local.custom_loss, static_cast<double>(local.output.loss_count)}, torch::kFloat64);
  group_->all_reduce_sum(sums);
  auto g = gather_rows(
      *group_,
      {request.want_delta_grad ? local.delta_grad : torch::Tensor(), local.output.logits, local.output.example_losses},
      shards, {false, /*logits: masked_lm has one row per masked token*/ true, false});
  PassResult r;
  r.loss_sum = sums[0].item<double>();
  r.custom_loss = sums[1].item<double>();
  r.output.loss_count = static_cast<int64_t>(sums[2].item<double>() + 0.5);
  const auto home = batch.input_ids.device();
  if (request.want_delta_grad && g[0].defined()) r.delta_grad = g[0].to(home);
  if (g[1].defined()) r.output.logits = g[1].to(home);
  if (g[2].defined()) r.output.example_losses = g[2].to(home);
  timing_.output_s += seconds_since(t0);
  return r;
}

models::ModelOutput DistributedEngine::forward_kept(const models::Batch& batch, int64_t cache_rows) {
  const auto shards = shard_batch(batch.size(), group_->size());
  kept_slice_ = shards[static_cast<size_t>(group_->rank())];
  // Every rank's local engine runs, an empty slice too (same generator draws on every rank).
  const auto local = local_->forward_kept(slice_batch(batch, kept_slice_), cache_rows);
  const auto t0 = Clock::now();
  auto count = torch::tensor({static_cast<double>(local.loss_count)}, torch::kFloat64);
  group_->all_reduce_sum(count);
  auto g = gather_rows(*group_, {local.logits}, shards);
  models::ModelOutput r;
  r.loss_count = static_cast<int64_t>(count[0].item<double>() + 0.5);
  if (g[0].defined()) r.logits = g[0].to(batch.input_ids.device());
  timing_.output_s += seconds_since(t0);
  return r;
}

void DistributedEngine::backward_kept(const torch::Tensor& logits_grad) {
  local_->backward_kept(logits_grad.narrow(0, kept_slice_.begin, kept_slice_.size));
}

std::vector<torch::Tensor> DistributedEngine::parameters() { return local_->parameters(); }

models::ModelOutput DistributedEngine::forward_with(const models::Batch& batch,
                                                    const std::vector<torch::Tensor>& params) {
  const auto shards = shard_batch(batch.size(), group_->size());
  const Shard mine = shards[static_cast<size_t>(group_->rank())];
  // Every rank's local engine runs, an empty slice too (same generator draws on every rank).
  const auto local = local_->forward_with(slice_batch(batch, mine), params);
  const auto t0 = Clock::now();
  auto count = torch::tensor({static_cast<double>(local.loss_count)}, torch::kFloat64);
  group_->all_reduce_sum(count);
  auto g = gather_rows(*group_, {local.logits, local.example_losses}, shards);
  models::ModelOutput out;
  out.loss_count = static_cast<int64_t>(count[0].item<double>() + 0.5);
  const auto home = batch.input_ids.device();
  if (g[0].defined()) out.logits = g[0].to(home);
  if (g[1].defined()) out.example_losses = g[1].to(home);
  timing_.output_s += seconds_since(t0);
  return out;
}

void DistributedEngine::reduce_gradients() {
  torch::NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(params_.size());
  // 0 undefined, 1 dense, 2 sparse: the most any rank has.
  auto kinds = torch::zeros({n}, torch::kInt64);
  for (int64_t j = 0; j < n; ++j) {
    const auto& g = params_[static_cast<size_t>(j)].grad();
    if (g.defined()) kinds[j] = g.is_sparse() ? 2 : 1;
  }
  group_->all_reduce_max(kinds);
  auto kind = kinds.accessor<int64_t, 1>();

  // Dense: flat buckets of one dtype, at most bucket_bytes each (a larger tensor alone).
  std::vector<int64_t> bucket;
  int64_t bucket_bytes = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    std::vector<torch::Tensor> flat_parts;
    for (auto j : bucket) {
      const auto& p = params_[static_cast<size_t>(j)];
      const auto& g = p.grad();
      // On the parameters' device: Gloo sums CPU buffers, NCCL GPU ones (ProcessGroup::use_nccl).
      flat_parts.push_back(g.defined() ? g.reshape({-1}) : torch::zeros({p.numel()}, p.options()));
    }
    auto flat = torch::cat(flat_parts);
    group_->all_reduce_sum(flat);
    int64_t offset = 0;
    for (auto j : bucket) {
      auto& p = params_[static_cast<size_t>(j)];
      p.mutable_grad() = flat.narrow(0, offset, p.numel()).view(p.sizes()).to(p.device());
      offset += p.numel();
    }
    bucket.clear();
    bucket_bytes = 0;
  };
  for (int64_t j = 0; j < n; ++j) {
    if (kind[j] != 1) continue;
    const auto& p = params_[static_cast<size_t>(j)];
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const auto& last = params_[static_cast<size_t>(bucket.empty() ? j : bucket.back())];
    if (!bucket.empty() && (bucket_bytes + bytes > options_.bucket_bytes || last.scalar_type() != p.scalar_type() ||
                            last.device() != p.device()))
      flush();
    bucket.push_back(j);
    bucket_bytes += bytes;
  }
  flush();

  // Sparse: every rank's rows. Row counts first (one gather for all sparse tensors), then indices
  // and values padded to the largest count.
  std::vector<int64_t> sparse;
  for (int64_t j = 0; j < n; ++j)
    if (kind[j] == 2) sparse.push_back(j);
  if (sparse.empty()) return;
  std::vector<torch::Tensor> local(sparse.size());
  auto nnz = torch::zeros({static_cast<int64_t>(sparse.size())}, torch::kInt64);
  for (size_t s = 0; s < sparse.size(); ++s) {
    auto& p = params_[static_cast<size_t>(sparse[s])];
    torch::Tensor g = p.grad();
    if (!g.defined())  // no rows on this rank (an empty slice): an empty sparse gradient
      g = torch::sparse_coo_tensor(torch::zeros({1, 0}, torch::TensorOptions().dtype(torch::kInt64).device(p.device())),
                                   torch::zeros({0, p.size(1)}, p.options()), p.sizes(),
                                   p.options().layout(torch::kSparse));
    else if (!g.is_sparse())
      g = g.to_sparse(1);
    if (p.dim() != 2 || g.sparse_dim() != 1)
      throw std::logic_error("DistributedEngine: sparse gradients must be (V, H) with rows sparse");
    local[s] = g.coalesce();  // on its device: NCCL has no sparse all-reduce, so rows are gathered
    nnz[static_cast<int64_t>(s)] = local[s]._nnz();
  }
  const auto counts = group_->all_gather(nnz);
  for (size_t s = 0; s < sparse.size(); ++s) {
    auto& p = params_[static_cast<size_t>(sparse[s])];
    int64_t most = 0;
    for (const auto& c : counts) most = std::max(most, c[static_cast<int64_t>(s)].item<int64_t>());
    const auto& g = local[s];
    auto indices = torch::zeros({1, most}, torch::TensorOptions().dtype(torch::kInt64).device(g.device()));
    auto values = torch::zeros({most, p.size(1)}, g._values().options());
    indices.narrow(1, 0, g._nnz()).copy_(g._indices());
    values.narrow(0, 0, g._nnz()).copy_(g._values());
    const auto all_indices = group_->all_gather(indices);
    const auto all_values = group_->all_gather(values);
    std::vector<torch::Tensor> parts;
    for (size_t r = 0; r < counts.size(); ++r) {
      const auto k = counts[r][static_cast<int64_t>(s)].item<int64_t>();
      parts.push_back(torch::sparse_coo_tensor(all_indices[r].narrow(1, 0, k), all_values[r].narrow(0, 0, k), p.sizes(),
                                               g.options()));
    }
    p.mutable_grad() = combine_sparse(parts).to(p.device());
  }
}

void DistributedEngine::optimizer_step() {
  if (options_.separate_waits) {
    const auto w0 = Clock::now();
    group_->barrier();
    timing_.wait_s += seconds_since(w0);
  }
  const auto t0 = Clock::now();
  reduce_gradients();
  timing_.gradient_s += seconds_since(t0);
  ++timing_.steps;
  local_->optimizer_step();
}

}  // namespace unif::framework
