// Batching: the deterministic example order of each epoch (from the seed, not from a global RNG,
// so an interrupted run resumes on the same order) and collation with dynamic padding (to the
// longest sequence of the batch, not to max_seq_length).
#pragma once
#include <cstdint>
#include <vector>

#include "framework/data/dataset.h"
#include "models/io.h"

namespace unif::framework {

/// Example indices of epoch `epoch`: 0..n-1, Fisher-Yates shuffled with a SplitMix64 stream seeded
/// from (seed, epoch) when `shuffle`. The same on every platform and standard library.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

/// Examples per mega-batch of length_grouped_order, in batches.
constexpr int64_t kMegaBatchBatches = 50;

/// `training.group_by_length` (HF Trainer's LengthGroupedSampler, made platform-independent): the
/// shuffled epoch_order(n, seed, epoch, true) is cut into mega-batches of kMegaBatchBatches ×
/// batch_size examples, each sorted by `lengths` (descending; ties keep the shuffled order); the
/// result cut into batches of batch_size, whose order is shuffled with another SplitMix64 stream of
/// (seed, epoch), then the batch holding the longest example is moved to the front (memory errors
/// show at once, as in HF). A last partial batch (n not a multiple of batch_size) stays last, so
/// batch k is always positions [k·batch_size, (k+1)·batch_size). A pure function of its arguments:
/// exact resume needs nothing more than (seed, epoch, position).
std::vector<int64_t> length_grouped_order(const std::vector<int64_t>& lengths, int64_t batch_size, uint64_t seed,
                                          int64_t epoch);

/// The examples at `indices` as one padded batch (CPU tensors), labels per task:
/// classification (B) int64, multilabel (B, C) float multi-hot, regression (B) float,
/// token_classification (B, L) int64 with -100 at ignored positions, span_extraction (B, 2) int64
/// (start, end piece of each window; 0/0 = [CLS]). sample_weights only when some
/// weight differs from 1. Labels are left undefined when any example lacks them.
models::Batch collate(Task task, const std::vector<EncodedExample>& encoded, const std::vector<Example>& examples,
                      const std::vector<int64_t>& indices, int64_t num_labels);

/// The windows' logits of each example pooled into one row per example (data.long_text windows,
/// TextWindows): `logits` per entry of `encoded`, in order; the result per example 0 .. examples - 1
/// (the mean over its windows, or the elementwise max).
std::vector<torch::Tensor> pool_windows(const std::vector<EncodedExample>& encoded,
                                        const std::vector<torch::Tensor>& logits, size_t examples, bool max_pooling);

}  // namespace unif::framework
