// Predictor's tokenizer and pooling, for a server's tokenize and info routes (predictor.h).
#include "framework/inference/predictor.h"

#include "framework/common/enum_names.h"
#include "framework/inference/predictor_state.h"
#include "models/heads/embedding_model.h"

namespace unif {

std::vector<TextToken> Predictor::tokenize(std::string_view text, std::optional<std::string_view> pair,
                                           bool add_special_tokens) const {
  const fw::Tokenizer& tok = *state_->lm.tokenizer;
  const fw::SpecialTokens& specials = tok.specials();
  std::vector<TextToken> out;
  const auto special = [&](const std::string& piece) {
    TextToken t;
    t.id = tok.token_to_id(piece);
    t.token = piece;
    t.special = true;
    t.segment = -1;
    out.push_back(std::move(t));
  };
  const auto segment = [&](std::string_view s, int index) {
    fw::Tokenized pieces = tok.tokenize_with_offsets(s);
    for (size_t i = 0; i < pieces.tokens.size(); ++i) {
      TextToken t;
      t.id = tok.token_to_id(pieces.tokens[i]);
      t.token = std::move(pieces.tokens[i]);
      t.segment = index;
      t.start = pieces.offsets[i].start;
      t.end = pieces.offsets[i].end;
      out.push_back(std::move(t));
    }
  };
  // The template of encode() (framework/text/encoding.h): cls a sep [sep] b sep.
  if (add_special_tokens) special(specials.cls);
  segment(text, 0);
  if (add_special_tokens) special(specials.sep);
  if (pair) {
    if (add_special_tokens && specials.pair_double_sep) special(specials.sep);
    segment(*pair, 1);
    if (add_special_tokens) special(specials.sep);
  }
  return out;
}

std::string Predictor::pooling() const {
  if (const auto* embedder = dynamic_cast<const models::EncoderForEmbeddingImpl*>(state_->lm.model.get()))
    return name_of(embedder->embedding_options().pooling);
  return "";
}

}  // namespace unif
