// DataParallelEngine: scatter / per-replica forward+backward / reduce on persistent worker threads.
// See data_parallel.h for the contract and docs/performance.md ("Data parallel") for the thread
// policy and measurements.
#include "framework/engines/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/autograd.h>

#include "framework/common/clock.h"
#include "framework/engines/coupled_pass.h"
#include "framework/common/error.h"
#include "framework/parallel/parameter_swap.h"
#include "framework/common/runtime.h"
#include "models/layers/dropout.h"

namespace unif::framework {

namespace {

torch::Tensor rows(const torch::Tensor& t, const Shard& s) { return t.defined() ? t.narrow(0, s.begin, s.size) : t; }

torch::Device device_of(const torch::nn::Module& m) {
  for (const auto& p : m.parameters()) return p.device();
  return torch::kCPU;
}

// Concatenates the defined tensors of `parts` along dim 0 on `device` (undefined when none is).
torch::Tensor gather(const std::vector<torch::Tensor>& parts, const torch::Device& device) {
  std::vector<torch::Tensor> defined;
  for (const auto& t : parts)
    if (t.defined()) defined.push_back(t.to(device));
  if (defined.empty()) return {};
  return defined.size() == 1 ? defined[0] : torch::cat(defined, 0);
}

// Re-throws the exception of replica `i` naming it; the class is kept for UserError and StrategyError.
[[noreturn]] void rethrow_for_replica(const std::exception_ptr& e, int64_t i, int64_t n, const torch::Device& d) {
  const std::string where =
      "data-parallel replica " + std::to_string(i) + " of " + std::to_string(n) + " (" + d.str() + "): ";
  try {
    std::rethrow_exception(e);
  } catch (const UserError& x) { throw UserError(where + x.what()); } catch (const StrategyError& x) {
    throw StrategyError(where + x.what());
  } catch (const c10::Error& x) {
    throw std::runtime_error(where + x.what_without_backtrace());
  } catch (const std::exception& x) { throw std::runtime_error(where + x.what()); } catch (...) {
    throw std::runtime_error(where + "unknown exception");
  }
}

}  // namespace

std::vector<Shard> shard_batch(int64_t batch, int64_t replicas) {
  if (replicas < 1) throw std::invalid_argument("shard_batch: replicas must be >= 1");
  std::vector<Shard> shards(static_cast<size_t>(replicas));
  const int64_t base = batch / replicas, extra = batch % replicas;
  int64_t begin = 0;
  for (int64_t i = 0; i < replicas; ++i) {
    const int64_t size = base + (i < extra ? 1 : 0);
    shards[static_cast<size_t>(i)] = {begin, size};
    begin += size;
  }
  return shards;
}

models::Batch slice_batch(const models::Batch& b, const Shard& s) {
  models::Batch out;
  out.input_ids = rows(b.input_ids, s);
  out.token_type_ids = rows(b.token_type_ids, s);
  out.attention_mask = rows(b.attention_mask, s);
  out.labels = rows(b.labels, s);
  out.sample_weights = rows(b.sample_weights, s);
  out.uniforms = rows(b.uniforms, s);
  out.token_ratio = b.token_ratio;
  return out;
}

torch::Tensor combine_sparse(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> indices, values;
  torch::Tensor first;
  for (const auto& g : grads) {
    if (!g.defined()) continue;
    if (!g.is_sparse()) throw std::invalid_argument("combine_sparse: a gradient is not sparse");
    if (!first.defined())
      first = g;
    else if (g.sizes() != first.sizes())
      throw std::invalid_argument("combine_sparse: gradients differ in shape");
    indices.push_back(g._indices());  // (1, nnz_r)
    values.push_back(g._values());    // (nnz_r, H)
  }
  if (!first.defined()) return {};
  return torch::sparse_coo_tensor(torch::cat(indices, 1), torch::cat(values, 0), first.sizes(), first.options())
      .coalesce();
}

DataParallelEngine::DataParallelEngine(std::shared_ptr<models::TaskModel> master, std::function<void()> optimizer_step,
                                       DataParallelOptions options)
    : master_(std::move(master)), optimizer_step_(std::move(optimizer_step)), devices_(std::move(options.devices)) {
  if (!master_) throw std::invalid_argument("DataParallelEngine: no model");
  if (devices_.empty()) throw UserError("parallel.devices: expected at least one device, e.g. [cpu]");
  const auto n = static_cast<int64_t>(devices_.size());
  dropout_family_ = options.dropout_family;
  precision_ = options.precision;
  threads_ =
      options.threads_per_replica > 0 ? options.threads_per_replica : std::max<int64_t>(1, available_cores() / n);
  // OpenBLAS's pool serves one caller at a time: with several CPU replicas, single-threaded BLAS
  // lets every replica multiply on its own thread at once (2 replicas on 2 cores: 48-54 samples/s
  // against 27-31 with the pooled BLAS, docs/performance.md). The user's OPENBLAS_NUM_THREADS wins.
  const auto cpu_replicas =
      std::count_if(devices_.begin(), devices_.end(), [](const torch::Device& d) { return d.is_cpu(); });
  // Restored when the engine goes (ScopedBlasThreads).
  if (cpu_replicas > 1) blas_threads_.emplace(1);
  cuda_ = std::any_of(devices_.begin(), devices_.end(), [](const torch::Device& d) { return d.is_cuda(); });
  streams_ = std::make_unique<ReplicaStreams>(devices_);

  // Replicas: the master itself where it already lives on device 0, deep copies elsewhere.
  const torch::Device master_device = device_of(*master_);
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 && devices_[0] == master_device) {
      replicas_.push_back(master_);
      master_is_replica0_ = true;
      continue;
    }
    auto copy = master_->clone_model();
    copy->to(devices_[static_cast<size_t>(i)]);
    // A CPU replica on the master's own device reads the master's parameter storage
    // instead of a copy of it: each replica parameter stays a leaf of its own (its own .grad, so
    // the replicas' backward passes never share an accumulator), only the values are shared. The
    // replicas only read parameters, and the master changes them (optimizer, ParameterSwap, a
    // loaded checkpoint) only between passes, in place. This saves a model's worth of memory per
    // extra replica (440 MB for BERT-base) and the copy after every step; sync_replicas still
    // copies any parameter whose storage is no longer the master's (one that was re-pointed).
    // Buffers stay copies (a custom model may write its own during forward).
    if (devices_[static_cast<size_t>(i)] == master_device && master_device.is_cpu()) {
      torch::NoGradGuard no_grad;
      auto mine = copy->parameters();
      const auto theirs = master_->parameters();
      if (mine.size() != theirs.size())
        throw std::logic_error("DataParallelEngine: clone_model() returned a model of another structure");
      for (size_t j = 0; j < mine.size(); ++j) mine[j].set_data(theirs[j].detach());
    }
    replicas_.push_back(std::move(copy));
  }
  // Each replica's models::Dropout modules draw from a generator of the replica's own (CPU or CUDA),
  // reseeded every pass from the global CPU generator (dropout_streams.h): runs repeat and resume
  // exactly with dropout on (Torch's global generators would hand masks to threads in any order).
  for (size_t i = 0; i < replicas_.size(); ++i) dropout_streams_.attach(*replicas_[i], i, devices_[i]);
  nccl_ = master_is_replica0_ && nccl_serves(devices_);
  for (const auto& p : master_->parameters()) master_params_.push_back(p);
  for (const auto& b : master_->buffers()) master_buffers_.push_back(b);
  for (const auto& r : replicas_) {
    params_.push_back(r->parameters());
    buffers_.push_back(r->buffers());
    if (params_.back().size() != master_params_.size() || buffers_.back().size() != master_buffers_.size())
      throw std::logic_error("DataParallelEngine: clone_model() returned a model of another structure");
    // A frozen master parameter (training.freeze) is frozen in every replica: no gradient computed.
    for (size_t j = 0; j < master_params_.size(); ++j)
      if (params_.back()[j].requires_grad() != master_params_[j].requires_grad())
        params_.back()[j].set_requires_grad(master_params_[j].requires_grad());
  }

  // Reduction plan: parameters dealt to the workers, largest first, to the least loaded.
  reduce_plan_.assign(static_cast<size_t>(n), {});
  std::vector<size_t> order(master_params_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return master_params_[a].numel() > master_params_[b].numel(); });
  std::vector<int64_t> load(static_cast<size_t>(n), 0);
  for (size_t j : order) {
    const auto w = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    reduce_plan_[w].push_back(j);
    load[w] += master_params_[j].numel();
  }

  workers_ = std::make_unique<WorkerPool>(n, threads_);
}

DataParallelEngine::~DataParallelEngine() { workers_.reset(); }  // the workers stop before the replicas go

int64_t DataParallelEngine::embedding_dim() const { return master_->word_embeddings()->options.embedding_dim(); }

void DataParallelEngine::on_workers(const std::function<void(int64_t)>& job, const std::vector<bool>& active) {
  const auto errors = workers_->run_each(active, [&](int64_t i) {
    streams_->run_on(static_cast<size_t>(i), [&] { job(i); });  // a GPU replica on its own stream
  });
  for (size_t i = 0; i < errors.size(); ++i)
    if (errors[i]) rethrow_for_replica(errors[i], static_cast<int64_t>(i), replicas(), devices_[i]);
}

PassResult DataParallelEngine::run(const models::Batch& batch, const torch::Tensor& delta, double scale,
                                   bool want_delta_grad) {
  return run_custom(batch, task_pass(delta, scale, want_delta_grad));
}

PassResult DataParallelEngine::run_custom(const models::Batch& batch, const PassRequest& request) {
  if (master_->couples_examples()) return run_coupled(*this, *master_, batch, request);
  const auto n = replicas();
  const auto shards = shard_batch(batch.size(), n);
  std::vector<bool> active(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) active[static_cast<size_t>(i)] = shards[static_cast<size_t>(i)].size > 0;
  const bool training = master_->is_training();
  for (auto& r : replicas_)
    if (r->is_training() != training) r->train(training);
  if (training) dropout_streams_.reseed(dropout_family_);
  const torch::Device home = device_of(*master_);
  const int64_t length = batch.input_ids.size(1);
  const bool backward = request.param_grads || request.want_delta_grad;

  struct Part {
    double loss_sum = 0.0, custom_loss = 0.0;
    torch::Tensor delta_grad, logits, example_losses;  // (b, L, H), (b, ...), (b)
    int64_t loss_count = 0;
  };
  std::vector<Part> parts(static_cast<size_t>(n));
  const std::function<void(int64_t)> pass = [&](int64_t i) {
    const auto& s = shards[static_cast<size_t>(i)];
    const auto& device = devices_[static_cast<size_t>(i)];
    const auto shard = to_device(slice_batch(batch, s), device);  // pinned, non-blocking to a GPU
    torch::Tensor d;                                              // (b, L, H), this replica's own leaf
    if (request.delta.defined())
      d = rows(request.delta, s).detach().to(device).clone();
    else if (request.want_delta_grad)
      d = torch::zeros({s.size, length, embedding_dim()}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
    if (request.want_delta_grad) d.requires_grad_(true);
    torch::AutoGradMode grad_mode(backward);  // grad mode is per thread: set it in the worker
    auto& replica = *replicas_[static_cast<size_t>(i)];
    models::ModelOutput out;
    {
      AutocastGuard autocast(precision_, device.type());  // per thread, around the forward only
      out = replica.forward(shard, d);
    }
    torch::Tensor task_loss = out.example_losses.defined() ? out.example_losses.sum() : torch::Tensor();
    torch::Tensor loss;          // summed over the shard
    if (request.pair_loss_fn) {  // twin pass: a second forward with its own dropout masks
      models::ModelOutput out2;
      {
        AutocastGuard autocast(precision_, device.type());  // the twin forward in the same precision
        out2 = replica.forward(shard, d);
      }
      if (task_loss.defined()) task_loss = 0.5 * (task_loss + out2.example_losses.sum());
      loss = request.pair_loss_fn(out, out2, s.begin);
    } else {
      loss = request.loss_fn ? request.loss_fn(out, s.begin) : task_loss;
    }
    if (backward && !loss.defined()) throw std::logic_error("a pass needs labels or a loss_fn to backpropagate");
    auto& p = parts[static_cast<size_t>(i)];
    if (request.param_grads) {
      (loss * request.scale).backward();
      if (request.want_delta_grad) p.delta_grad = d.grad().detach();
    } else if (request.want_delta_grad) {
      p.delta_grad = torch::autograd::grad({loss * request.scale}, {d})[0].detach();
    }
    if (task_loss.defined()) p.loss_sum = task_loss.item<double>();
    if (request.loss_fn || request.pair_loss_fn) p.custom_loss = loss.item<double>();
    p.logits = out.logits.detach();
    if (out.example_losses.defined()) p.example_losses = out.example_losses.detach();
    p.loss_count = out.loss_count;
  };
  synchronize_device(home);  // what the calling thread queued (the batch's copy, delta) is complete
  auto t0 = Clock::now();
  try {
    on_workers(pass, active);
  } catch (...) {
    drop_replica_gradients();  // a failed pass must not leak into the next reduction
    throw;
  }
  timing_.compute_s = seconds_since(t0);

  t0 = Clock::now();
  if (request.param_grads) reduce_gradients(active);
  PassResult r;
  std::vector<torch::Tensor> delta_grads, logits, losses;
  for (const auto& p : parts) {  // batch order: shards are contiguous and in replica order
    r.loss_sum += p.loss_sum;
    r.custom_loss += p.custom_loss;
    r.output.loss_count += p.loss_count;
    delta_grads.push_back(p.delta_grad);
    logits.push_back(p.logits);
    losses.push_back(p.example_losses);
  }
  if (request.want_delta_grad) r.delta_grad = gather(delta_grads, home);
  r.output.logits = gather(logits, home);
  r.output.example_losses = gather(losses, home);
  timing_.reduce_s = seconds_since(t0);
  return r;
}

GradientCache::Forward DataParallelEngine::replica_forward(int64_t i) {
  return [this, i](const models::Batch& b) {
    AutocastGuard autocast(precision_, devices_[static_cast<size_t>(i)].type());
    return replicas_[static_cast<size_t>(i)]->forward(b, {});
  };
}

models::ModelOutput DataParallelEngine::forward_kept(const models::Batch& batch, int64_t cache_rows) {
  const auto n = replicas();
  caches_.assign(static_cast<size_t>(n), GradientCache());
  kept_shards_ = shard_batch(batch.size(), n);
  kept_active_.assign(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) kept_active_[static_cast<size_t>(i)] = kept_shards_[static_cast<size_t>(i)].size > 0;
  kept_.assign(static_cast<size_t>(n), {});
  const bool training = master_->is_training();
  for (auto& r : replicas_)
    if (r->is_training() != training) r->train(training);
  if (training) dropout_streams_.reseed(dropout_family_);
  const torch::Device home = device_of(*master_);
  std::vector<torch::Tensor> logits(static_cast<size_t>(n));
  std::vector<int64_t> counts(static_cast<size_t>(n), 0);
  const std::function<void(int64_t)> pass = [&](int64_t i) {
    const auto& device = devices_[static_cast<size_t>(i)];
    const auto shard = to_device(slice_batch(batch, kept_shards_[static_cast<size_t>(i)]), device);
    torch::AutoGradMode grad_mode(true);  // per thread
    models::ModelOutput out;
    if (cache_rows > 0) {
      out = caches_[static_cast<size_t>(i)].forward(
          shard, cache_rows, dropout_streams_.generators(static_cast<size_t>(i)), replica_forward(i));
    } else {
      AutocastGuard autocast(precision_, device.type());
      out = replicas_[static_cast<size_t>(i)]->forward(shard, {});
      kept_[static_cast<size_t>(i)] = out.logits;
    }
    logits[static_cast<size_t>(i)] = out.logits.detach();
    counts[static_cast<size_t>(i)] = out.loss_count;
  };
  synchronize_device(home);
  const auto t0 = Clock::now();
  try {
    on_workers(pass, kept_active_);
  } catch (...) {
    kept_.clear();
    caches_.clear();
    throw;
  }
  timing_.compute_s = seconds_since(t0);
  models::ModelOutput r;
  r.logits = gather(logits, home);
  for (auto c : counts) r.loss_count += c;
  return r;
}

void DataParallelEngine::backward_kept(const torch::Tensor& logits_grad) {
  if (kept_.size() != static_cast<size_t>(replicas()))
    throw std::logic_error("DataParallelEngine::backward_kept without forward_kept");
  const std::function<void(int64_t)> pass = [&](int64_t i) {
    const auto& s = kept_shards_[static_cast<size_t>(i)];
    auto& cache = caches_[static_cast<size_t>(i)];
    if (cache.active()) return cache.backward(logits_grad.narrow(0, s.begin, s.size), replica_forward(i));
    torch::Tensor kept = std::move(kept_[static_cast<size_t>(i)]);
    const auto grad = logits_grad.narrow(0, s.begin, s.size).to(kept.device(), kept.scalar_type());
    torch::autograd::backward({kept}, {grad});
  };
  auto t0 = Clock::now();
  try {
    on_workers(pass, kept_active_);
  } catch (...) {
    kept_.clear();
    caches_.clear();
    drop_replica_gradients();  // a failed pass must not leak into the next reduction
    throw;
  }
  kept_.clear();
  caches_.clear();
  timing_.compute_s += seconds_since(t0);
  t0 = Clock::now();
  reduce_gradients(kept_active_);
  timing_.reduce_s = seconds_since(t0);
}

void DataParallelEngine::reduce_gradients(const std::vector<bool>& active) {
  if (cuda_) return reduce_gradients_cuda(active);
  const auto n = replicas();
  const size_t first = master_is_replica0_ ? 1 : 0;  // replica 0's gradients already are the master's
  const torch::Device home = device_of(*master_);
  const std::function<void(int64_t)> reduce = [&](int64_t w) {
    torch::NoGradGuard no_grad;
    for (size_t j : reduce_plan_[static_cast<size_t>(w)]) {
      torch::Tensor& master_grad = master_params_[j].mutable_grad();
      bool sparse = master_grad.defined() && master_grad.is_sparse();
      std::vector<torch::Tensor> grads;
      for (size_t r = first; r < replicas_.size(); ++r) {
        torch::Tensor& g = params_[r][j].mutable_grad();
        if (active[r] && g.defined()) {
          sparse = sparse || g.is_sparse();
          grads.push_back(g.to(home));
        }
        g.reset();
      }
      if (grads.empty()) {
        if (sparse) master_grad = combine_sparse({master_grad});  // one coalesced form whatever N is
        continue;
      }
      if (sparse) {
        grads.insert(grads.begin(), master_grad);  // all replicas' rows, never one replica's
        master_grad = combine_sparse(grads);
        continue;
      }
      for (auto& g : grads) {
        if (!master_grad.defined())
          master_grad = g;  // the replica let go of it above
        else
          master_grad.add_(g);
      }
    }
  };
  on_workers(reduce, std::vector<bool>(static_cast<size_t>(n), true));
}

void DataParallelEngine::reduce_gradients_cuda(const std::vector<bool>& active) {
  torch::NoGradGuard no_grad;
  const size_t first = master_is_replica0_ ? 1 : 0;
  const torch::Device home = device_of(*master_);
  std::vector<size_t> dense;
  for (size_t j = 0; j < master_params_.size(); ++j) {
    torch::Tensor& master_grad = master_params_[j].mutable_grad();
    bool sparse = master_grad.defined() && master_grad.is_sparse();
    for (size_t r = first; r < replicas_.size(); ++r) {
      const auto& g = params_[r][j].grad();
      sparse = sparse || (active[r] && g.defined() && g.is_sparse());
    }
    if (!sparse) {
      dense.push_back(j);
      continue;
    }
    // Every replica's rows, concatenated and coalesced on the master's device (SPEC §5).
    std::vector<torch::Tensor> grads{master_grad};
    for (size_t r = first; r < replicas_.size(); ++r) {
      torch::Tensor& g = params_[r][j].mutable_grad();
      if (active[r] && g.defined()) grads.push_back(g.to(home));
      g.reset();
    }
    master_grad = combine_sparse(grads);
  }
  if (nccl_) {
    std::vector<std::vector<torch::Tensor>> grads(replicas_.size());
    for (size_t r = 0; r < replicas_.size(); ++r)
      for (size_t j : dense) grads[r].push_back(r == 0 || active[r] ? params_[r][j].grad() : torch::Tensor());
    const auto sums = nccl_reduce_sum(grads, devices_);
    for (size_t k = 0; k < dense.size(); ++k)
      if (sums[k].defined()) master_params_[dense[k]].mutable_grad() = sums[k];
    for (size_t r = 1; r < replicas_.size(); ++r)
      for (size_t j : dense) params_[r][j].mutable_grad().reset();
  } else {
    for (size_t j : dense) {
      torch::Tensor& master_grad = master_params_[j].mutable_grad();
      for (size_t r = first; r < replicas_.size(); ++r) {
        torch::Tensor& g = params_[r][j].mutable_grad();
        if (active[r] && g.defined()) {
          if (!master_grad.defined())
            master_grad = g.to(home);
          else
            master_grad.add_(g.to(home));
        }
        g.reset();
      }
    }
  }
  for (const auto& d : devices_) synchronize_device(d);
}

void DataParallelEngine::sync_replicas() {
  if (cuda_) {
    torch::NoGradGuard no_grad;
    if (nccl_) {  // one coalesced broadcast of the parameters, one of the buffers
      std::vector<std::vector<torch::Tensor>*> params, buffers;
      for (size_t r = 1; r < replicas_.size(); ++r) {
        params.push_back(&params_[r]);
        buffers.push_back(&buffers_[r]);
      }
      broadcast_into(master_params_, params, devices_);
      if (!master_buffers_.empty()) broadcast_into(master_buffers_, buffers, devices_);
    } else {
      for (size_t r = master_is_replica0_ ? 1 : 0; r < replicas_.size(); ++r) {
        for (size_t j = 0; j < params_[r].size(); ++j) params_[r][j].copy_(master_params_[j]);
        for (size_t j = 0; j < buffers_[r].size(); ++j) buffers_[r][j].copy_(master_buffers_[j]);
      }
    }
    for (size_t r = master_is_replica0_ ? 1 : 0; r < replicas_.size(); ++r)
      for (auto& p : params_[r]) p.mutable_grad().reset();
    for (const auto& d : devices_) synchronize_device(d);
    return;
  }
  const auto n = replicas();
  std::vector<bool> active(static_cast<size_t>(n), true);
  if (master_is_replica0_) active[0] = false;
  const std::function<void(int64_t)> copy = [&](int64_t r) {
    torch::NoGradGuard no_grad;
    auto& params = params_[static_cast<size_t>(r)];
    auto& buffers = buffers_[static_cast<size_t>(r)];
    for (size_t j = 0; j < params.size(); ++j) {
      // In place (the replica's storage is kept); nothing to copy where it is the master's own.
      if (!params[j].is_same(master_params_[j]) && params[j].data_ptr() != master_params_[j].data_ptr())
        params[j].copy_(master_params_[j]);
      params[j].mutable_grad().reset();
    }
    for (size_t j = 0; j < buffers.size(); ++j) buffers[j].copy_(master_buffers_[j]);
  };
  on_workers(copy, active);
}

void DataParallelEngine::drop_replica_gradients() {
  for (size_t r = master_is_replica0_ ? 1 : 0; r < replicas_.size(); ++r)
    for (auto& p : params_[r]) p.mutable_grad().reset();
}

models::ModelOutput DataParallelEngine::forward_with(const models::Batch& batch,
                                                     const std::vector<torch::Tensor>& params) {
  PassResult r;
  try {
    ParameterSwap swap(master_params_, params);
    sync_replicas();
    PassRequest forward_only;
    forward_only.param_grads = false;
    r = run_custom(batch, forward_only);
  } catch (...) {  // the swap has put the master's values back: the replicas take them again
    sync_replicas();
    throw;
  }
  sync_replicas();  // the master's own values are back
  return std::move(r.output);
}

void DataParallelEngine::optimizer_step() {
  optimizer_step_();
  sync_replicas();
}

}  // namespace unif::framework
