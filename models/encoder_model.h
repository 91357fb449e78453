// EncoderModel: what a task head needs of a family's encoder (BertModel, RobertaModel, ...): the
// hidden states of a batch, the word-embedding table adversarial methods perturb and MLM decoders
// tie to, and the options it was built with. Each family's encoder is a torch::nn module named as
// HF names it, registered by the task model under the family's prefix ("bert", "roberta", ...).
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/types.h>

#include "models/encoder_config.h"
#include "models/layer_tap.h"

namespace unif::models {

struct EncoderOutput {
  torch::Tensor last_hidden_state;  // (B, L, H); (B, 1, H) when first_token_only
  torch::Tensor pooler_output;      // (B, H); undefined without a pooler
  torch::Tensor embedding_output;   // (B, L, H): the embeddings module's output
  torch::Tensor attention_mask;     // (B, L) 1/0 as the encoder read it (heads that pool over it)
};

class EncoderModel : public torch::nn::Module {
 public:
  /// input_ids (B, L) int64 (always given: some families derive positions from it);
  /// token_type_ids (B, L) or undefined (zeros; ignored by families without token types);
  /// attention_mask (B, L) 1/0 or undefined (ones); word_embedding_delta (B, L, H_emb) or undefined,
  /// added to word_embeddings(input_ids) before anything else (adversarial methods, SPEC §5).
  /// first_token_only: the last layer may compute position 0 alone (heads that read it only).
  /// tap: every layer's output and an early stop (layer_tap.h); null: the last hidden state only.
  virtual EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                               const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                               bool first_token_only, LayerTap* tap = nullptr) = 0;
  /// The word-embedding table (HF's get_input_embeddings()).
  virtual torch::nn::Embedding word_embeddings() = 0;
  virtual const EncoderConfig& encoder_options() const = 0;
};

/// A family's sequence-classification head (its modules registered on the task model under HF's
/// names): logits (B, C) from the encoder output.
class SequenceHead {
 public:
  virtual ~SequenceHead() = default;
  virtual torch::Tensor forward(const EncoderOutput& encoded) = 0;
};

/// A family's per-position head for token classification and span extraction (modules registered on
/// the task model under HF's names): logits (B, L, C) of the last hidden states (B, L, H). Families
/// without one use BERT's dropout + classifier (qa_outputs).
class TokenHead {
 public:
  virtual ~TokenHead() = default;
  virtual torch::Tensor forward(const torch::Tensor& hidden) = 0;
};

/// A family's masked-LM head (modules registered on the task model under HF's names, decoder tied
/// to the encoder's word embeddings): vocabulary logits (N, V) of hidden states (N, H).
class LmHead {
 public:
  virtual ~LmHead() = default;
  virtual torch::Tensor forward(const torch::Tensor& hidden) = 0;
};

/// E = word_embeddings(input_ids) (+ delta): the first step of every family's embeddings.
inline torch::Tensor embed_words(torch::nn::Embedding& table, const torch::Tensor& input_ids,
                                 const torch::Tensor& delta) {
  torch::Tensor e = table(input_ids);
  if (!delta.defined()) return e;
  if (delta.sizes() != e.sizes())
    throw std::invalid_argument("word_embedding_delta must have the shape (B, L, H) of the word embeddings");
  return e + delta;
}

/// The (B, L) attention mask, ones when undefined; std::invalid_argument unless (B, L) like input_ids.
inline torch::Tensor attention_mask_or_ones(const torch::Tensor& mask, const torch::Tensor& input_ids) {
  if (!mask.defined()) return torch::ones_like(input_ids);
  if (mask.dim() != 2 || mask.sizes() != input_ids.sizes())
    throw std::invalid_argument("attention_mask must be (B, L) like the inputs");
  return mask;
}

}  // namespace unif::models
