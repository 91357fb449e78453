// SentencePieceTokenizer: a SentencePiece unigram model run as HF's fast tokenizers run it, in one
// of two layouts:
//
// XLM-R (load, sentencepiece.bpe.model; HF's XLMRobertaTokenizer): the model's precompiled
// normalization (nmt_nfkc), split on white space, "▁" before each word, unigram pieces by Viterbi
// over the model's scores (unknown characters one fused <unk>), ids in fairseq's order (<s>=0,
// <pad>=1, </s>=2, <unk>=3, the model's pieces shifted by one, <mask> last); template
// <s> a </s></s> b </s>, types all 0.
//
// ALBERT (load_albert, spiece.model; HF's AlbertTokenizer): the model's own ids (<pad>=0, <unk>=1,
// [CLS]=2, [SEP]=3, [MASK]=4 in ALBERT's models); before the precompiled map, HF's ALBERT
// normalizers: `` and '' become ", then unless keep_accents NFKD and every combining mark
// (categories Mn, Mc, Me) dropped, then if do_lower_case lower-casing (per character); template
// [CLS] a [SEP] b [SEP], with b and its [SEP] type 1 as transformers 4 and the original ALBERT
// give them, or types all 0 for a model written by transformers 5, whose AlbertTokenizer returns no
// token_type_ids (so the model sees zeros): tokenizer_config.json's model_input_names decides, else
// config.json's transformers_version, else the original's types.
//
// DeBERTa-v2/v3 (load_deberta, spm.model; HF's DebertaV2Tokenizer): the model's own ids ([PAD]=0,
// [CLS]=1, [SEP]=2, [UNK]=3 in DeBERTa-v3's models), [MASK] added after the model's pieces when the
// model lacks it (an added token: never a Viterbi piece); HF's normalizers: lower-casing if
// do_lower_case, the precompiled map, trailing white space stripped, runs of spaces to one (the
// kept space has the run's last span); no white-space split: Metaspace turns each space into "▁"
// (so a piece's offsets include the space before it), prepends one to each text segment and cuts
// before every "▁"; template [CLS] a [SEP] b [SEP], b and its [SEP] type 1 (DebertaV2Tokenizer
// returns token_type_ids).
//
// In all three, every piece of HF's vocabulary can match normalized text, control pieces included, as in
// HF's Unigram trie (full-width "＜pad＞" normalizes to the piece <pad>). Both give code point
// offsets in the input as HF does (a replaced `` has the span of its second character, characters
// an expansion adds the span of their source).
//
//   auto sp = SentencePieceTokenizer::load("model_dir");   // sentencepiece.bpe.model
//   auto out = sp.tokenize_with_offsets("Hello world");    // {"▁Hello", "▁world"}, {0,5}, {6,11}
//   auto al = SentencePieceTokenizer::load_albert("albert_dir");  // spiece.model (+ tokenizer_config.json)
//
// Written here rather than on Google's libsentencepiece: Debian's build of it carries its own copy
// of protobuf whose exported symbols collide with the libprotobuf LibTorch loads (the process dies
// at start-up), and HF's pipeline differs from SentencePiece's own in its details (grapheme-wise
// normalization, white space, offsets), which is what users' models were trained with.
// Special tokens written in the text are cut out first, as HF's added vocabulary does. Input is
// UTF-8; invalid bytes become U+FFFD (see unicode::decode_utf8).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework/text/added_tokens.h"
#include "framework/text/tokenizer.h"  // Tokenized, CharSpan

namespace unif::framework {

class SentencePieceTokenizer : public Tokenizer {
 public:
  /// Reads `dir`/sentencepiece.bpe.model. Throws UserError naming the file when it is
  /// missing or not a SentencePiece unigram model.
  static SentencePieceTokenizer load(const std::string& dir);
  /// A model from its serialized ModelProto bytes (`where` names it in errors).
  static SentencePieceTokenizer from_bytes(const std::string& model, const std::string& where);

  /// HF AlbertTokenizer's options (tokenizer_config.json).
  struct AlbertOptions {
    bool do_lower_case = true;  // lower-case each character
    bool keep_accents = false;  // false: NFKD, then drop combining marks
  };
  /// ALBERT's layout: reads `dir`/spiece.model, and do_lower_case / keep_accents from
  /// `dir`/tokenizer_config.json when it has them (else HF's defaults, true / false). Throws
  /// UserError naming the file when a file is missing or bad, or the model lacks one of <pad>,
  /// <unk>, [CLS], [SEP], [MASK].
  static SentencePieceTokenizer load_albert(const std::string& dir);
  /// ALBERT's layout from serialized ModelProto bytes.
  static SentencePieceTokenizer albert_from_bytes(const std::string& model, const std::string& where,
                                                  AlbertOptions options);
  /// HF DebertaV2Tokenizer's options (tokenizer_config.json). split_by_punct true is refused.
  struct DebertaOptions {
    bool do_lower_case = false;
  };
  /// DeBERTa's layout: reads `dir`/spm.model, and do_lower_case from `dir`/tokenizer_config.json
  /// when it has it (else false). Throws UserError naming the file when a file is missing or bad,
  /// the model lacks one of [PAD], [CLS], [SEP], [UNK] or a precompiled normalization, or
  /// split_by_punct is true.
  static SentencePieceTokenizer load_deberta(const std::string& dir);
  /// DeBERTa's layout from serialized ModelProto bytes.
  static SentencePieceTokenizer deberta_from_bytes(const std::string& model, const std::string& where,
                                                   DebertaOptions options);
  bool deberta() const { return layout_ == Layout::Deberta; }
  const DebertaOptions& deberta_options() const { return deberta_options_; }
  /// The ALBERT options in use (defaults for the XLM-R layout, where they do not apply).
  bool albert() const { return layout_ == Layout::Albert; }
  const AlbertOptions& albert_options() const { return albert_options_; }

  /// Pieces of `utf8` (no <s>/</s> added) with their code point spans in `utf8` (HF's offset_mapping).
  Tokenized tokenize_with_offsets(std::string_view utf8) const override;

  /// HF ids (XLM-R: fairseq order; ALBERT, DeBERTa: the model's); -1 for a piece the model does not have.
  int64_t find_id(std::string_view piece) const override;
  bool continues_word(const std::string& piece) const override { return piece.rfind("\xE2\x96\x81", 0) != 0; }  // "▁"
  std::string id_to_token(int64_t id) const override;
  /// HF's len(tokenizer): XLM-R the model's pieces + <pad> + <mask>; ALBERT the model's pieces;
  /// DeBERTa the model's pieces (+ [MASK] when the model lacks it).
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }

  /// The normalization of `text` (code points): ALBERT's steps, then the precompiled map (DeBERTa:
  /// lower-casing, the map, trailing white space stripped, space runs to one), with each
  /// output character's span in the input (exposed for tests).
  std::u32string normalize(const std::u32string& text, std::vector<CharSpan>* alignment) const;

 private:
  enum class Layout { Fairseq, Albert, Deberta };
  SentencePieceTokenizer() = default;
  static SentencePieceTokenizer parse(const std::string& model, const std::string& where, Layout layout);
  std::u32string precompiled(const std::u32string& text, const std::vector<CharSpan>& spans,
                             std::vector<CharSpan>* alignment) const;
  void encode_segment(const std::u32string& text, int64_t begin, int64_t end, Tokenized& out) const;
  void viterbi(const std::u32string& word, const std::vector<CharSpan>& spans, Tokenized& out) const;
  const char* charsmap_lookup(std::string_view bytes) const;

  std::vector<std::pair<std::string, float>> pieces_;  // by HF id
  std::unordered_map<std::string, int64_t> ids_;       // piece -> HF id (matchable pieces only)
  size_t max_piece_bytes_ = 0;
  float unk_score_ = 0.0f;
  int64_t unk_id_ = 3;  // the id Viterbi gives unknown characters
  Layout layout_ = Layout::Fairseq;
  AlbertOptions albert_options_;
  DebertaOptions deberta_options_;
  int64_t added_mask_id_ = -1;  // DeBERTa: [MASK]'s id when HF adds it after the model's pieces
  std::vector<uint32_t> trie_;  // the charsmap's double array (darts-clone units)
  std::string normalized_;      // the charsmap's NUL-terminated replacement strings
  std::vector<AddedToken> added_{{"<s>"}, {"<pad>"}, {"</s>"}, {"<unk>"}, {"<mask>"}};  // ALBERT: its five
};

}  // namespace unif::framework
