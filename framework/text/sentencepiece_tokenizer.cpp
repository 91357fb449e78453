// SentencePieceTokenizer: see sentencepiece_tokenizer.h. The steps follow HF tokenizers' Precompiled
// normalizer, WhitespaceSplit + Metaspace pre-tokenizers and Unigram model (encode_optimized).
#include "framework/text/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "framework/common/error.h"
#include "framework/common/strings.h"
#include "framework/text/unicode.h"

namespace unif::framework {
namespace {

constexpr char32_t kMeta = 0x2581;  // '▁'
constexpr float kUnkPenalty = 10.0f;

bool is_mark(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

// Protocol buffer reading: just what a ModelProto needs.
struct Reader {
  const std::string& data;
  size_t pos, end;
  const std::string& where;
  [[noreturn]] void bad() const { throw UserError(where + ": not a SentencePiece model (bad protobuf)"); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end) bad();
      const auto b = static_cast<unsigned char>(data[pos++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    bad();
  }
  // Calls f(field, wire type, reader over a length-delimited value or nullptr, varint value, fixed32 bytes).
  template <class F>
  void fields(F&& f) {
    while (pos < end) {
      const uint64_t key = varint();
      const int field = static_cast<int>(key >> 3), type = static_cast<int>(key & 7);
      if (type == 0) {
        f(field, type, nullptr, varint(), nullptr);
      } else if (type == 2) {
        const uint64_t len = varint();
        if (len > end - pos) bad();
        Reader sub{data, pos, pos + len, where};
        pos += len;
        f(field, type, &sub, 0, nullptr);
      } else if (type == 5) {
        if (end - pos < 4) bad();
        f(field, type, nullptr, 0, data.data() + pos);
        pos += 4;
      } else if (type == 1) {
        if (end - pos < 8) bad();
        pos += 8;
      } else {
        bad();
      }
    }
  }
  std::string str() const { return data.substr(pos, end - pos); }
};

}  // namespace

SentencePieceTokenizer SentencePieceTokenizer::parse(const std::string& model, const std::string& where,
                                                     Layout layout) {
  struct Piece {
    std::string text;
    float score = 0.0f;
    int type = 1;  // NORMAL=1 UNKNOWN=2 CONTROL=3 USER_DEFINED=4 UNUSED=5 BYTE=6
  };
  std::vector<Piece> pieces;
  std::string charsmap;
  int model_type = 1;  // UNIGRAM
  Reader top{model, 0, model.size(), where};
  top.fields([&](int field, int type, Reader* sub, uint64_t, const char*) {
    if (field == 1 && type == 2) {  // pieces
      Piece p;
      sub->fields([&](int f, int t, Reader* s, uint64_t v, const char* fixed) {
        if (f == 1 && t == 2)
          p.text = s->str();
        else if (f == 2 && t == 5)
          std::memcpy(&p.score, fixed, 4);
        else if (f == 3 && t == 0)
          p.type = static_cast<int>(v);
      });
      pieces.push_back(std::move(p));
    } else if (field == 2 && type == 2) {  // trainer_spec
      sub->fields([&](int f, int t, Reader*, uint64_t v, const char*) {
        if (f == 3 && t == 0) model_type = static_cast<int>(v);
      });
    } else if (field == 3 && type == 2) {  // normalizer_spec
      sub->fields([&](int f, int t, Reader* s, uint64_t, const char*) {
        if (f == 2 && t == 2) charsmap = s->str();
      });
    }
  });
  if (pieces.size() < 3) throw UserError(where + ": not a SentencePiece model (fewer than 3 pieces)");
  if (model_type != 1)
    throw UserError(where + ": a SentencePiece model of type " + std::to_string(model_type) +
                    "; only unigram models (type 1, XLM-R's, ALBERT's and DeBERTa's) are supported");

  SentencePieceTokenizer t;
  t.layout_ = layout;
  float min_score = 0.0f;
  if (layout == Layout::Deberta) {
    // DeBERTa's template: [CLS] a [SEP] b [SEP], b and its [SEP] type 1. The model's pieces in
    // order, every one matchable; [MASK] after them when the model lacks it (HF's added token).
    t.specials_ = {"[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", /*pair_double_sep=*/false, /*pair_token_types=*/true};
    t.unk_id_ = -1;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const auto id = static_cast<int64_t>(i);
      t.pieces_.emplace_back(pieces[i].text, pieces[i].score);
      min_score = std::min(min_score, pieces[i].score);
      t.ids_.emplace(pieces[i].text, id);
      t.max_piece_bytes_ = std::max(t.max_piece_bytes_, pieces[i].text.size());
      if (pieces[i].type == 2 && t.unk_id_ < 0) t.unk_id_ = id;
    }
    const SpecialTokens& sp = t.specials_;
    t.added_.clear();
    for (const std::string* token : {&sp.pad, &sp.cls, &sp.sep, &sp.unk}) {
      if (!t.ids_.count(*token))
        throw UserError(where + ": not a DeBERTa SentencePiece model (it has no piece '" + *token +
                        "'; DeBERTa-v3's are [PAD], [CLS], [SEP], [UNK])");
      t.added_.push_back({*token});
    }
    if (!t.ids_.count(sp.mask)) {
      t.added_mask_id_ = static_cast<int64_t>(t.pieces_.size());
      t.pieces_.emplace_back(sp.mask, 0.0f);
    }
    t.added_.push_back({sp.mask});
    if (t.unk_id_ < 0) t.unk_id_ = t.ids_.at(sp.unk);
    if (charsmap.empty())
      throw UserError(where +
                      ": a DeBERTa SentencePiece model without a precompiled normalization (charsmap) "
                      "is not supported");
  } else if (layout == Layout::Albert) {
    // ALBERT's template: [CLS] a [SEP] b [SEP]; b's token types as the model's writer gave them
    // (load_albert), 0 without a directory.
    t.specials_ = {"[CLS]", "[SEP]", "<pad>", "[MASK]", "<unk>", /*pair_double_sep=*/false, /*pair_token_types=*/false};
    // HF's vocabulary is the model's pieces in order, every one of them matchable (HF's Unigram
    // puts all of them in its trie, control symbols included).
    t.unk_id_ = -1;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const auto id = static_cast<int64_t>(i);
      t.pieces_.emplace_back(pieces[i].text, pieces[i].score);
      min_score = std::min(min_score, pieces[i].score);
      t.ids_.emplace(pieces[i].text, id);
      t.max_piece_bytes_ = std::max(t.max_piece_bytes_, pieces[i].text.size());
      if (pieces[i].type == 2 && t.unk_id_ < 0) t.unk_id_ = id;
    }
    const SpecialTokens& sp = t.specials_;
    t.added_.clear();
    for (const std::string* token : {&sp.pad, &sp.unk, &sp.cls, &sp.sep, &sp.mask}) {
      if (!t.ids_.count(*token))
        throw UserError(where + ": not an ALBERT SentencePiece model (it has no piece '" + *token +
                        "'; ALBERT's are <pad>, <unk>, [CLS], [SEP], [MASK])");
      t.added_.push_back({*token});
    }
    if (t.unk_id_ < 0) t.unk_id_ = t.ids_.at(sp.unk);
  } else {
    if (pieces[0].type != 2)
      throw UserError(where + ": expected XLM-R's layout (<unk>, <s>, </s> as the model's first pieces)");
    // XLM-R's template: <s> a </s></s> b </s>, every token type 0.
    t.specials_ = {"<s>", "</s>", "<pad>", "<mask>", "<unk>", /*pair_double_sep=*/true, /*pair_token_types=*/false};
    // HF's vocabulary: fairseq's four, the model's pieces after its own <unk> <s> </s>, then <mask>;
    // every one of them matchable, as in HF's Unigram trie (text that normalizes to "<pad>", e.g.
    // the full-width "＜pad＞", is that piece).
    t.pieces_ = {{"<s>", 0.0f}, {"<pad>", 0.0f}, {"</s>", 0.0f}, {"<unk>", 0.0f}};
    for (size_t i = 3; i < pieces.size(); ++i) {
      t.pieces_.emplace_back(pieces[i].text, pieces[i].score);
      min_score = std::min(min_score, pieces[i].score);
    }
    t.pieces_.emplace_back("<mask>", 0.0f);
    for (size_t id = 0; id < t.pieces_.size(); ++id) {
      t.ids_.emplace(t.pieces_[id].first, static_cast<int64_t>(id));
      t.max_piece_bytes_ = std::max(t.max_piece_bytes_, t.pieces_[id].first.size());
    }
  }
  t.unk_score_ = min_score - kUnkPenalty;

  if (!charsmap.empty()) {  // uint32 trie size, the double array, then the replacement strings
    uint32_t trie_bytes = 0;
    if (charsmap.size() < 4) throw UserError(where + ": a precompiled charsmap shorter than its header");
    std::memcpy(&trie_bytes, charsmap.data(), 4);
    if (trie_bytes % 4 != 0 || trie_bytes > charsmap.size() - 4 || trie_bytes == 0)
      throw UserError(where + ": a precompiled charsmap with a bad trie size");
    t.trie_.resize(trie_bytes / 4);
    std::memcpy(t.trie_.data(), charsmap.data() + 4, trie_bytes);
    t.normalized_ = charsmap.substr(4 + trie_bytes);
  }
  return t;
}

SentencePieceTokenizer SentencePieceTokenizer::from_bytes(const std::string& model, const std::string& where) {
  return parse(model, where, Layout::Fairseq);
}

SentencePieceTokenizer SentencePieceTokenizer::albert_from_bytes(const std::string& model, const std::string& where,
                                                                 AlbertOptions options) {
  SentencePieceTokenizer t = parse(model, where, Layout::Albert);
  t.albert_options_ = options;
  return t;
}

SentencePieceTokenizer SentencePieceTokenizer::deberta_from_bytes(const std::string& model, const std::string& where,
                                                                  DebertaOptions options) {
  SentencePieceTokenizer t = parse(model, where, Layout::Deberta);
  t.deberta_options_ = options;
  return t;
}

SentencePieceTokenizer SentencePieceTokenizer::load(const std::string& dir) {
  const std::string path = dir + "/sentencepiece.bpe.model";
  return from_bytes(read_file(path), path);
}

namespace {

// The boolean `keys` that `dir`/tokenizer_config.json sets (a key absent or null is not in the map).
// UserError naming the file when it is not a JSON object or a value is not a boolean.
std::map<std::string, bool> tokenizer_config_flags(const std::string& dir, std::initializer_list<const char*> keys) {
  std::map<std::string, bool> flags;
  const std::string config = dir + "/tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(config, ec)) return flags;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(config));
  } catch (const nlohmann::json::exception& e) { throw UserError(config + ": not valid JSON (" + e.what() + ")"); }
  if (!j.is_object()) throw UserError(config + ": not a JSON object");
  for (const char* key : keys) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_boolean()) throw UserError(config + ": " + key + " must be true or false");
    flags[key] = it->get<bool>();
  }
  return flags;
}

}  // namespace

namespace {

/// The JSON object in `file`, or null when the file does not exist (UserError when it is not JSON).
nlohmann::json read_json_object(const std::string& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return nullptr;
  try {
    auto j = nlohmann::json::parse(read_file(file));
    return j.is_object() ? j : nlohmann::json();
  } catch (const nlohmann::json::exception& e) { throw UserError(file + ": not valid JSON (" + e.what() + ")"); }
}

/// Whether an ALBERT pair gives its second segment token type 1, as the library that wrote the
/// model did: tokenizer_config.json's model_input_names when it lists them; else config.json's
/// transformers_version (5 and later return no token_type_ids, so the model sees zeros; 4 and the
/// original ALBERT pass types 0/1); else the original's types.
bool albert_pair_token_types(const std::string& dir) {
  const auto tokenizer_config = read_json_object(dir + "/tokenizer_config.json");
  if (tokenizer_config.is_object() && tokenizer_config.contains("model_input_names") &&
      tokenizer_config.at("model_input_names").is_array()) {
    for (const auto& name : tokenizer_config.at("model_input_names"))
      if (name == "token_type_ids") return true;
    return false;
  }
  const auto config = read_json_object(dir + "/config.json");
  if (config.is_object() && config.contains("transformers_version") && config.at("transformers_version").is_string()) {
    const std::string version = config.at("transformers_version").get<std::string>();
    return std::atoi(version.c_str()) < 5;
  }
  return true;
}

}  // namespace

SentencePieceTokenizer SentencePieceTokenizer::load_albert(const std::string& dir) {
  AlbertOptions options;
  const auto flags = tokenizer_config_flags(dir, {"do_lower_case", "keep_accents"});
  if (flags.count("do_lower_case")) options.do_lower_case = flags.at("do_lower_case");
  if (flags.count("keep_accents")) options.keep_accents = flags.at("keep_accents");
  const std::string path = dir + "/spiece.model";
  auto t = albert_from_bytes(read_file(path), path, options);
  t.specials_.pair_token_types = albert_pair_token_types(dir);
  return t;
}

SentencePieceTokenizer SentencePieceTokenizer::load_deberta(const std::string& dir) {
  DebertaOptions options;
  const auto flags = tokenizer_config_flags(dir, {"do_lower_case", "split_by_punct"});
  if (flags.count("do_lower_case")) options.do_lower_case = flags.at("do_lower_case");
  if (flags.count("split_by_punct") && flags.at("split_by_punct"))
    throw UserError(
        dir + "/tokenizer_config.json: split_by_punct true (punctuation split before the pieces) is not supported");
  const std::string path = dir + "/spm.model";
  return deberta_from_bytes(read_file(path), path, options);
}

int64_t SentencePieceTokenizer::find_id(std::string_view piece) const {
  if (layout_ == Layout::Deberta && added_mask_id_ >= 0 && piece == specials_.mask) return added_mask_id_;
  if (layout_ != Layout::Fairseq) {
    const auto it = ids_.find(std::string(piece));
    return it == ids_.end() ? -1 : it->second;
  }
  for (size_t i = 0; i < added_.size(); ++i)
    if (piece == added_[i].content) return i < 4 ? static_cast<int64_t>(i) : vocab_size() - 1;
  const auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

std::string SentencePieceTokenizer::id_to_token(int64_t id) const {
  return id >= 0 && id < vocab_size() ? pieces_[static_cast<size_t>(id)].first : specials_.unk;
}

// The replacement of the shortest charsmap key that `bytes` starts with (darts-clone's
// commonPrefixSearch, first result), or nullptr: HF's Precompiled::transform.
const char* SentencePieceTokenizer::charsmap_lookup(std::string_view bytes) const {
  if (trie_.empty()) return nullptr;
  auto offset = [](uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); };
  size_t node = offset(trie_[0]);
  for (unsigned char c : bytes) {
    node ^= c;
    if (node >= trie_.size()) return nullptr;
    const uint32_t unit = trie_[node];
    if ((unit & ((1u << 31) | 0xFF)) != c) return nullptr;
    node ^= offset(unit);
    if (node >= trie_.size()) return nullptr;
    if ((unit >> 8) & 1) {
      const uint32_t value = trie_[node] & ((1u << 31) - 1);
      return value < normalized_.size() ? normalized_.c_str() + value : nullptr;
    }
  }
  return nullptr;
}

std::u32string SentencePieceTokenizer::normalize(const std::u32string& text, std::vector<CharSpan>* alignment) const {
  // Each step keeps, per character, its span in `text`: HF's NormalizedString alignments.
  std::u32string cur = text;
  std::vector<CharSpan> spans(text.size());
  for (size_t i = 0; i < text.size(); ++i) spans[i] = {static_cast<int64_t>(i), static_cast<int64_t>(i) + 1};
  if (layout_ == Layout::Fairseq) return precompiled(cur, spans, alignment);
  std::u32string next;
  std::vector<CharSpan> next_spans;
  auto step = [&] {
    cur.swap(next);
    spans.swap(next_spans);
    next.clear();
    next_spans.clear();
  };
  if (layout_ == Layout::Deberta) {
    if (deberta_options_.do_lower_case) {  // Lowercase, before the precompiled map
      std::u32string lower;
      for (size_t i = 0; i < cur.size(); ++i) {
        lower.clear();
        unicode::append_lower(cur[i], lower);
        for (char32_t c : lower) {
          next.push_back(c);
          next_spans.push_back(spans[i]);
        }
      }
      step();
    }
    std::vector<CharSpan> mapped;
    cur = precompiled(cur, spans, &mapped);
    spans.swap(mapped);
    // Strip(right): trailing white space dropped.
    while (!cur.empty() && unicode::is_white_space(cur.back())) {
      cur.pop_back();
      spans.pop_back();
    }
    // Replace(" {2,}", " "): the kept space has the span of the run's last one.
    for (size_t i = 0; i < cur.size(); ++i) {
      if (cur[i] == U' ') {
        size_t j = i;
        while (j + 1 < cur.size() && cur[j + 1] == U' ') ++j;
        next.push_back(U' ');
        next_spans.push_back(spans[j]);
        i = j;
      } else {
        next.push_back(cur[i]);
        next_spans.push_back(spans[i]);
      }
    }
    if (alignment) *alignment = next_spans;
    return next;
  }
  // Replace("``", "\"") then Replace("''", "\""): leftmost matches, the quote takes the span of the
  // pair's second character (HF aligns a replacement to the last character it removes).
  for (char32_t q : {U'`', U'\''}) {
    for (size_t i = 0; i < cur.size(); ++i) {
      if (cur[i] == q && i + 1 < cur.size() && cur[i + 1] == q) {
        next.push_back(U'"');
        next_spans.push_back(spans[++i]);
      } else {
        next.push_back(cur[i]);
        next_spans.push_back(spans[i]);
      }
    }
    step();
  }
  if (!albert_options_.keep_accents) {
    // NFKD, then StripAccents: HF drops every combining mark (General_Category M: Mn, Mc, Me). A
    // decomposition's characters share their source's span. (NFKD's canonical reordering only
    // moves characters of nonzero combining class, all of them marks, which are dropped.)
    utf8proc_int32_t buf[64];
    for (size_t i = 0; i < cur.size(); ++i) {
      utf8proc_int32_t boundclass = 0;
      const auto n =
          utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cur[i]), buf, 64,
                                  static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT), &boundclass);
      const bool ok = n > 0 && n <= 64;
      for (utf8proc_ssize_t k = 0; k < (ok ? n : 1); ++k) {
        const char32_t c = ok ? static_cast<char32_t>(buf[k]) : cur[i];
        if (is_mark(c)) continue;
        next.push_back(c);
        next_spans.push_back(spans[i]);
      }
    }
    step();
  }
  if (albert_options_.do_lower_case) {  // HF's Lowercase: each character's full lower-case mapping
    std::u32string lower;
    for (size_t i = 0; i < cur.size(); ++i) {
      lower.clear();
      unicode::append_lower(cur[i], lower);
      for (char32_t c : lower) {
        next.push_back(c);
        next_spans.push_back(spans[i]);
      }
    }
    step();
  }
  return precompiled(cur, spans, alignment);
}

std::u32string SentencePieceTokenizer::precompiled(const std::u32string& text, const std::vector<CharSpan>& spans,
                                                   std::vector<CharSpan>* alignment) const {
  // HF's Precompiled normalizer: per extended grapheme cluster, the cluster's replacement when it
  // is shorter than 6 bytes and has one, else each character's. Its (char, change) list then
  // aligns the output to the input as NormalizedString::transform does: change 0 replaces the next
  // input character, 1 is inserted (it shares the previous input character's span), -n also drops
  // the n input characters after.
  std::vector<std::pair<char32_t, int64_t>> changes;
  auto replace = [&](int64_t old_count, const char* norm) {
    const std::u32string repl = unicode::decode_utf8(norm);
    for (char32_t c : repl) changes.emplace_back(c, 0);
    const auto diff = static_cast<int64_t>(repl.size()) - old_count;
    if (diff > 0) {
      for (int64_t k = 0; k < diff; ++k) changes[changes.size() - 1 - k].second = 1;
    } else if (diff < 0 && !changes.empty()) {
      changes.back().second += diff;
    }
  };
  const auto n = static_cast<int64_t>(text.size());
  utf8proc_int32_t state = 0;
  for (int64_t g0 = 0; g0 < n;) {
    int64_t g1 = g0 + 1;
    state = 0;
    while (g1 < n && !utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(text[g1 - 1]),
                                                       static_cast<utf8proc_int32_t>(text[g1]), &state))
      ++g1;
    const std::string grapheme = unicode::encode_utf8(std::u32string_view(text).substr(g0, g1 - g0));
    const char* norm = grapheme.size() < 6 ? charsmap_lookup(grapheme) : nullptr;
    if (norm) {
      replace(g1 - g0, norm);
    } else {
      for (int64_t k = g0; k < g1; ++k) {
        std::string ch;
        unicode::append_utf8(ch, text[k]);
        if (const char* r = charsmap_lookup(ch))
          replace(1, r);
        else
          changes.emplace_back(text[k], 0);
      }
    }
    g0 = g1;
  }
  std::u32string out;
  int64_t orig = 0;
  for (const auto& [c, change] : changes) {
    CharSpan span;  // in the original text, through `spans`
    if (change > 0) {
      span = orig == 0 ? CharSpan{0, 0} : spans[static_cast<size_t>(std::min(orig, n) - 1)];
    } else {
      span = orig < n ? spans[static_cast<size_t>(orig)] : CharSpan{spans.back().end, spans.back().end};
      orig += 1 - change;  // the replaced character and the -change dropped after it
    }
    out.push_back(c);
    if (alignment) alignment->push_back(span);
  }
  return out;
}

void SentencePieceTokenizer::viterbi(const std::u32string& word, const std::vector<CharSpan>& spans,
                                     Tokenized& out) const {
  // HF's Unigram::encode_optimized over the word's characters: the best-scoring segmentation into
  // vocabulary pieces; a character no piece starts with is <unk> at min score - 10.
  const size_t n = word.size();
  std::vector<std::string> chars(n);
  for (size_t i = 0; i < n; ++i) unicode::append_utf8(chars[i], word[i]);
  struct Node {
    double score = 0.0;
    int64_t start = -1;  // -1: not reached
    int64_t id = -1;
  };
  std::vector<Node> best(n + 1);
  best[0].start = 0;
  std::string candidate;
  for (size_t s = 0; s < n; ++s) {
    const double here = best[s].score;
    bool single = false;
    candidate.clear();
    for (size_t e = s; e < n && candidate.size() + chars[e].size() <= max_piece_bytes_; ++e) {
      candidate += chars[e];
      const auto it = ids_.find(candidate);
      if (it == ids_.end()) continue;
      const double score = here + pieces_[it->second].second;
      Node& target = best[e + 1];
      if (target.start < 0 || score > target.score) target = {score, static_cast<int64_t>(s), it->second};
      if (e == s) single = true;
    }
    if (!single) {
      const double score = here + unk_score_;
      Node& target = best[s + 1];
      if (target.start < 0 || score > target.score) target = {score, static_cast<int64_t>(s), unk_id_};
    }
  }
  // Back from the end; consecutive unknowns become one <unk> (HF's fuse_unk).
  std::vector<std::pair<int64_t, int64_t>> path;  // (start, id), last piece first
  for (int64_t e = static_cast<int64_t>(n); e > 0; e = best[e].start) {
    if (best[e].id == unk_id_ && !path.empty() && path.back().second == unk_id_)
      path.back().first = best[e].start;
    else
      path.emplace_back(best[e].start, best[e].id);
  }
  std::reverse(path.begin(), path.end());
  for (size_t k = 0; k < path.size(); ++k) {
    const int64_t s = path[k].first, e = k + 1 < path.size() ? path[k + 1].first : static_cast<int64_t>(n);
    CharSpan span{spans[s].start, spans[s].end};
    for (int64_t i = s; i < e; ++i)
      span.start = std::min(span.start, spans[i].start), span.end = std::max(span.end, spans[i].end);
    out.tokens.push_back(pieces_[path[k].second].first);
    out.offsets.push_back(span);
  }
}

void SentencePieceTokenizer::encode_segment(const std::u32string& text, int64_t begin, int64_t end,
                                            Tokenized& out) const {
  std::vector<CharSpan> spans;
  const std::u32string norm = normalize(text.substr(begin, end - begin), &spans);
  for (auto& s : spans) s.start += begin, s.end += begin;
  if (layout_ == Layout::Deberta) {
    // Metaspace (prepend_scheme always, split), no white-space split: each space is "▁" (with the
    // space's span), one "▁" before the segment unless it starts with one (with the first
    // character's span), cut before every "▁" (merged with what follows).
    if (norm.empty()) return;
    std::u32string part;
    std::vector<CharSpan> part_spans;
    if (norm[0] != U' ' && norm[0] != kMeta) {
      part.push_back(kMeta);
      part_spans.push_back(spans[0]);
    }
    for (size_t k = 0; k < norm.size(); ++k) {
      const char32_t c = norm[k] == U' ' ? kMeta : norm[k];
      if (c == kMeta && !part.empty()) {
        viterbi(part, part_spans, out);
        part.clear();
        part_spans.clear();
      }
      part.push_back(c);
      part_spans.push_back(spans[k]);
    }
    viterbi(part, part_spans, out);
    return;
  }
  // WhitespaceSplit, then Metaspace (prepend_scheme always, split): "▁" before each word that does
  // not start with one, with the span of the word's first character; the word is then cut before
  // every "▁" in it, and each part gets its pieces on its own.
  std::u32string part;
  std::vector<CharSpan> part_spans;
  for (size_t i = 0; i < norm.size();) {
    if (unicode::is_white_space(norm[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < norm.size() && !unicode::is_white_space(norm[j])) ++j;
    part.clear();
    part_spans.clear();
    if (norm[i] != kMeta) {
      part.push_back(kMeta);
      part_spans.push_back(spans[i]);
    }
    for (size_t k = i; k < j; ++k) {
      if (norm[k] == kMeta && !part.empty()) {
        viterbi(part, part_spans, out);
        part.clear();
        part_spans.clear();
      }
      part.push_back(norm[k]);
      part_spans.push_back(spans[k]);
    }
    viterbi(part, part_spans, out);
    i = j;
  }
}

Tokenized SentencePieceTokenizer::tokenize_with_offsets(std::string_view utf8) const {
  const std::u32string text = unicode::decode_utf8(utf8);
  Tokenized out;
  split_added_tokens(
      text, added_, [&](int64_t begin, int64_t end) { encode_segment(text, begin, end, out); },
      [&](size_t index, int64_t start, int64_t end) {
        out.tokens.push_back(added_[index].content);
        out.offsets.push_back({start, end});
      });
  return out;
}

}  // namespace unif::framework
