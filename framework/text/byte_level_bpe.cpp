// ByteLevelBpe: see byte_level_bpe.h.
#include "framework/text/byte_level_bpe.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <queue>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "framework/common/error.h"
#include "framework/common/strings.h"
#include "framework/text/unicode.h"

namespace unif::framework {
namespace {

constexpr char32_t kSpaceSymbol = 0x0120;  // 'Ġ', the byte symbol of ' '

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

bool is_letter(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return true;
    default: return false;
  }
}

bool is_number(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_other(char32_t cp) { return !unicode::is_white_space(cp) && !is_letter(cp) && !is_number(cp); }

// The length of the GPT-2 pattern's match at `i` (< end):
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
int64_t match_length(const std::u32string& t, int64_t i, int64_t end) {
  if (t[i] == U'\'' && i + 1 < end) {
    const char32_t a = t[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 < end) {
      const char32_t b = t[i + 2];
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    }
  }
  for (bool (*cls)(char32_t) : {is_letter, is_number, is_other}) {
    int64_t j = i;
    if (t[j] == U' ' && j + 1 < end && cls(t[j + 1])) ++j;
    if (!cls(t[j])) continue;
    while (j < end && cls(t[j])) ++j;
    return j - i;
  }
  // White space: all of it at the end of the text, else all but the last character before a
  // non-space (which may then start the next match as its optional space), at least one.
  int64_t j = i;
  while (j < end && unicode::is_white_space(t[j])) ++j;
  if (j == end || j - i == 1) return j - i;
  return j - i - 1;
}

std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& where) {
  const auto space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string::npos)
    throw UserError(where + ": a merge is two pieces separated by one space, got '" + line + "'");
  return {line.substr(0, space), line.substr(space + 1)};
}

// A vocabulary id: a non-negative integer (a float or a huge number is refused, not converted).
int64_t id_of(const nlohmann::json& v, const std::string& piece) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX) || v.get<int64_t>() < 0)
    throw UserError("the id of '" + piece + "' is not a non-negative integer");
  return v.get<int64_t>();
}

}  // namespace

char32_t ByteLevelBpe::byte_symbol(unsigned char b) {
  // bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes map in
  // order to U+0100 and up.
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int c = 0; c < 256; ++c) {
      const bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
      t[c] = printable ? static_cast<char32_t>(c) : next++;
    }
    return t;
  }();
  return table[b];
}

namespace {

/// text[begin, end) in Unicode NFC (HF's NFC normalizer) appended to `out`, with the index in `text`
/// of each character in `src`: per run of a starter and the combining marks after it; a run that
/// composes maps its characters to the run's first (as HF's alignments: U+1100 U+1161 U+11A8 -> "각" at 0).
void append_nfc(const std::u32string& text, int64_t begin, int64_t end, std::u32string& out,
                std::vector<int64_t>& src) {
  int64_t k = begin;
  while (k < end) {
    int64_t stop = k + 1;
    // A run: a starter, the combining marks after it, and Hangul vowel / final jamo (they compose too).
    auto joins = [](char32_t c) {
      return unicode::combining_class(c) != 0 || (c >= 0x1161 && c <= 0x1175) || (c >= 0x11A8 && c <= 0x11C2);
    };
    while (stop < end && joins(text[static_cast<size_t>(stop)])) ++stop;
    if (stop == k + 1 && text[static_cast<size_t>(k)] < 0x300) {  // nothing below U+0300 composes alone
      out.push_back(text[static_cast<size_t>(k)]);
      src.push_back(k);
      k = stop;
      continue;
    }
    const std::string run =
        unicode::encode_utf8(std::u32string_view(text).substr(static_cast<size_t>(k), static_cast<size_t>(stop - k)));
    utf8proc_uint8_t* mapped = nullptr;
    const auto n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()), static_cast<utf8proc_ssize_t>(run.size()),
                     &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const std::u32string composed =
        n >= 0 ? unicode::decode_utf8(std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n)))
               : std::u32string(text, static_cast<size_t>(k), static_cast<size_t>(stop - k));
    std::free(mapped);
    const bool same_length = static_cast<int64_t>(composed.size()) == stop - k;
    for (size_t i = 0; i < composed.size(); ++i) {
      out.push_back(composed[i]);
      src.push_back(same_length ? k + static_cast<int64_t>(i) : k);
    }
    k = stop;
  }
}

/// A special token's name in tokenizer_config.json: a string or {"content": ...}; "" when absent.
std::string config_token(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && it->at("content").is_string())
    return it->at("content").get<std::string>();
  return "";
}

/// The template of tokenizer.json's post_processor (RobertaProcessing, BertProcessing,
/// TemplateProcessing, or a Sequence holding one) onto `sp`; false when it has none of them.
bool read_post_processor(const nlohmann::json& pp, SpecialTokens& sp) {
  if (!pp.is_object()) return false;
  const std::string type = pp.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& p : pp.value("processors", nlohmann::json::array()))
      if (read_post_processor(p, sp)) return true;
    return false;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    sp.cls = pp.at("cls").at(0).get<std::string>();
    sp.sep = pp.at("sep").at(0).get<std::string>();
    sp.pair_double_sep = type == "RobertaProcessing";
    sp.pair_token_types = type == "BertProcessing";
    return true;
  }
  if (type != "TemplateProcessing") return false;
  // Every special token of the templates must be defined in special_tokens (HF refuses the file).
  const auto& defined = pp.contains("special_tokens") ? pp.at("special_tokens") : nlohmann::json::object();
  for (const char* which : {"single", "pair"})
    for (const auto& item : pp.at(which))
      if (item.contains("SpecialToken")) {
        const auto id = item.at("SpecialToken").at("id").get<std::string>();
        if (!defined.is_object() || !defined.contains(id))
          throw UserError("post_processor: the " + std::string(which) + " template's special token '" + id +
                          "' is not defined in its special_tokens");
      }
  // single: [SpecialToken cls, Sequence A, SpecialToken sep]; pair: ... A, sep (, sep), B, sep.
  std::vector<std::string> single;
  for (const auto& item : pp.at("single"))
    if (item.contains("SpecialToken")) single.push_back(item.at("SpecialToken").at("id").get<std::string>());
  if (single.size() != 2)
    throw UserError("post_processor: a single-sequence template with " + std::to_string(single.size()) +
                    " special tokens (expected 2: cls A sep)");
  sp.cls = single[0];
  sp.sep = single[1];
  int between = 0;
  bool after_a = false;
  for (const auto& item : pp.at("pair")) {
    if (item.contains("Sequence")) {
      const auto& seq = item.at("Sequence");
      if (seq.value("id", std::string()) == "A") after_a = true;
      if (seq.value("id", std::string()) == "B") {
        sp.pair_token_types = seq.value("type_id", 0) == 1;
        break;
      }
    } else if (after_a && item.contains("SpecialToken")) {
      ++between;
    }
  }
  if (between != 1 && between != 2)
    throw UserError("post_processor: a pair template with " + std::to_string(between) +
                    " special tokens between the sequences (expected 1 or 2)");
  sp.pair_double_sep = between == 2;
  return true;
}

/// tokenizer.json's BPE model options that change how words become pieces and that this tokenizer
/// does not implement: refused by name (null, or their no-op value, is accepted).
void check_bpe_options(const nlohmann::json& model) {
  auto set = [&](const char* key) { return model.contains(key) && !model.at(key).is_null(); };
  if (set("dropout") && !(model.at("dropout").is_number() && model.at("dropout").get<double>() == 0.0))
    throw UserError("model.dropout " + model.at("dropout").dump() +
                    ": BPE dropout (sampled merges, a training-time augmentation) is not supported; set it to null");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (set(key) && !(model.at(key).is_string() && model.at(key).get<std::string>().empty()))
      throw UserError("model." + std::string(key) + " " + model.at(key).dump() +
                      " is not supported for byte-level BPE (null or \"\")");
  if (set("byte_fallback") && model.at("byte_fallback") != false)
    throw UserError("model.byte_fallback is not supported for byte-level BPE (every byte has its own symbol)");
}

/// tokenizer.json's pre_tokenizer: ByteLevel with the GPT-2 split pattern (alone or the only member
/// of a Sequence); anything else is refused by name. Returns its add_prefix_space.
bool read_pre_tokenizer(const nlohmann::json& pre) {
  if (pre.is_null()) throw UserError("pre_tokenizer is null; byte-level BPE needs the ByteLevel pre-tokenizer");
  const std::string type = pre.value("type", std::string());
  if (type == "Sequence") {
    const auto members = pre.value("pretokenizers", nlohmann::json::array());
    if (members.size() == 1) return read_pre_tokenizer(members.at(0));
    std::string names;
    for (const auto& m : members) names += (names.empty() ? "" : ", ") + m.value("type", std::string("?"));
    throw UserError("pre_tokenizer: a Sequence of [" + names +
                    "] is not supported (byte-level BPE reads the ByteLevel pre-tokenizer alone)");
  }
  if (type != "ByteLevel")
    throw UserError("pre_tokenizer '" + type + "' is not supported for byte-level BPE (ByteLevel)");
  if (!pre.value("use_regex", true))
    throw UserError("pre_tokenizer: ByteLevel with use_regex false is not supported (the GPT-2 split pattern)");
  return pre.value("add_prefix_space", false);
}

/// Whether tokenizer.json's normalizer is NFC (alone or in a Sequence); std::invalid_argument for others.
bool read_nfc(const nlohmann::json& normalizer) {
  if (normalizer.is_null()) return false;
  const std::string type = normalizer.value("type", std::string());
  if (type == "NFC") return true;
  if (type == "Sequence") {
    bool nfc = false;
    for (const auto& n : normalizer.value("normalizers", nlohmann::json::array())) nfc = read_nfc(n) || nfc;
    return nfc;
  }
  throw UserError("normalizer '" + type + "' is not supported for byte-level BPE (NFC or none)");
}

}  // namespace

ByteLevelBpe::ByteLevelBpe(std::unordered_map<std::string, int64_t> vocab,
                           const std::vector<std::pair<std::string, std::string>>& merges,
                           std::vector<AddedToken> added, bool add_prefix_space, bool ignore_merges)
    : vocab_(std::move(vocab)),
      added_(std::move(added)),
      add_prefix_space_(add_prefix_space),
      ignore_merges_(ignore_merges) {
  // As HF's BPE builder: both sides of a merge and what it makes must be in the vocabulary.
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [left, right] = merges[r];
    for (const std::string& piece : {left, right, left + right})
      if (!vocab_.count(piece))
        throw UserError("byte-level BPE: merge " + std::to_string(r + 1) + " ('" + left + " " + right + "') needs '" +
                        piece + "', which is not in the vocabulary");
    merges_.emplace(std::make_pair(vocab_.at(left), vocab_.at(right)),
                    Merge{static_cast<int>(r), vocab_.at(left + right)});  // first rank wins
  }
  // RoBERTa's template: <s> a </s></s> b </s>, every token type 0.
  specials_ = {"<s>", "</s>", "<pad>", "<mask>", "<unk>", /*pair_double_sep=*/true, /*pair_token_types=*/false};
  for (const auto& [piece, id] : vocab_) {
    const auto [at, fresh] = tokens_.emplace(id, piece);
    if (!fresh)
      throw UserError("byte-level BPE: the id " + std::to_string(id) + " is given to both '" + at->second + "' and '" +
                      piece + "'");
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  for (const auto& a : added_) {
    if (a.content.empty()) throw UserError("byte-level BPE: an added token is empty");
    if (!vocab_.count(a.content)) throw UserError("byte-level BPE: the added token '" + a.content + "' has no id");
  }
}

ByteLevelBpe ByteLevelBpe::load(const std::string& dir) {
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<AddedToken> added;
  bool add_prefix_space = false, ignore_merges = false, nfc = false, words_with_space = true, trim_offsets = true;
  SpecialTokens specials;
  specials.cls = "<s>", specials.sep = "</s>", specials.pad = "<pad>", specials.mask = "<mask>", specials.unk = "<unk>";
  specials.pair_double_sep = true, specials.pair_token_types = false;  // RoBERTa's
  const std::string tokenizer_json = dir + "/tokenizer.json";
  if (std::ifstream(tokenizer_json).good()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(tokenizer_json));
      const auto& model = j.at("model");
      if (model.value("type", std::string()) != "BPE")
        throw UserError("model.type is '" + model.value("type", std::string()) + "', expected BPE");
      for (const auto& [piece, id] : model.at("vocab").items()) vocab.emplace(piece, id_of(id, piece));
      ignore_merges = model.value("ignore_merges", false);
      check_bpe_options(model);
      for (const auto& m : model.at("merges")) {
        if (m.is_string())
          merges.push_back(split_merge(m.get<std::string>(), tokenizer_json));
        else
          merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      }
      if (j.contains("added_tokens"))
        for (const auto& a : j.at("added_tokens")) {
          AddedToken t{a.at("content").get<std::string>(), a.value("lstrip", false), a.value("rstrip", false)};
          vocab.emplace(t.content, id_of(a.at("id"), t.content));
          added.push_back(std::move(t));
        }
      if (j.contains("post_processor") && read_post_processor(j.at("post_processor"), specials) &&
          specials.cls == "[CLS]")
        specials.pad = "[PAD]", specials.mask = "[MASK]", specials.unk = "[UNK]";  // BERT-style names
      // RoBERTa's tokenizer encodes pre-split words with add_prefix_space; a plain
      // PreTrainedTokenizerFast (ModernBERT's template) encodes each word as it is.
      words_with_space = specials.pair_double_sep;
      // HF trims a piece's spaces from its offsets in RobertaProcessing (trim_offsets) only.
      trim_offsets = specials.pair_double_sep;
      if (j.contains("normalizer")) nfc = read_nfc(j.at("normalizer"));
      add_prefix_space = read_pre_tokenizer(j.at("pre_tokenizer"));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(tokenizer_json + ": " + e.what());
    } catch (const UserError& e) {
      const std::string what = e.what();
      throw UserError(what.rfind(tokenizer_json, 0) == 0 ? what : tokenizer_json + ": " + what);
    }
  } else {
    const std::string vocab_json = dir + "/vocab.json", merges_txt = dir + "/merges.txt";
    try {
      const auto j = nlohmann::json::parse(read_file(vocab_json));
      for (const auto& [piece, id] : j.items()) vocab.emplace(piece, id_of(id, piece));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(vocab_json + ": " + e.what());
    } catch (const UserError& e) { throw UserError(vocab_json + ": " + e.what()); }
    std::istringstream lines(read_file(merges_txt));
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (first && line.rfind("#version", 0) == 0) {
        first = false;
        continue;
      }
      first = false;
      if (line.empty()) continue;
      merges.push_back(split_merge(line, merges_txt));
    }
    for (const char* s : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"})
      if (vocab.count(s)) added.push_back({s, std::string(s) == "<mask>", false});
  }
  // tokenizer_config.json names the pad, mask and unk tokens where it is present.
  const std::string config_file = dir + "/tokenizer_config.json";
  if (std::ifstream(config_file).good()) {
    try {
      const auto config = nlohmann::json::parse(read_file(config_file));
      if (const auto t = config_token(config, "pad_token"); !t.empty()) specials.pad = t;
      if (const auto t = config_token(config, "mask_token"); !t.empty()) specials.mask = t;
      if (const auto t = config_token(config, "unk_token"); !t.empty()) specials.unk = t;
    } catch (const nlohmann::json::exception& e) { throw UserError(config_file + ": " + e.what()); }
  }
  try {
    ByteLevelBpe bpe(std::move(vocab), merges, std::move(added), add_prefix_space, ignore_merges);
    bpe.specials_ = specials;
    bpe.nfc_ = nfc;
    bpe.words_with_space_ = words_with_space;
    bpe.trim_offsets_ = trim_offsets;
    return bpe;
  } catch (const UserError& e) {
    throw UserError((std::ifstream(tokenizer_json).good() ? tokenizer_json : dir + "/vocab.json + merges.txt") + ": " +
                    e.what());
  }
}

int64_t ByteLevelBpe::find_id(std::string_view piece) const {
  const auto it = vocab_.find(std::string(piece));
  return it == vocab_.end() ? -1 : it->second;
}

std::string ByteLevelBpe::id_to_token(int64_t id) const {
  const auto it = tokens_.find(id);
  return it == tokens_.end() ? specials_.unk : it->second;
}

std::optional<std::vector<std::string>> ByteLevelBpe::WordCache::find(const std::string& word) const {
  std::shared_lock lock(mutex_);
  const auto it = words_.find(word);
  if (it == words_.end()) return std::nullopt;
  return it->second;
}

void ByteLevelBpe::WordCache::insert(const std::string& word, const std::vector<std::string>& pieces) {
  std::unique_lock lock(mutex_);
  if (words_.size() < kCachedWords) words_.emplace(word, pieces);
}

std::vector<std::string> ByteLevelBpe::bpe(const std::string& symbols) const {
  if (ignore_merges_ && vocab_.count(symbols)) return {symbols};
  const bool cacheable = symbols.size() <= kCachedWordBytes;
  if (cacheable)
    if (auto hit = cache_->find(symbols)) return *hit;
  // One symbol per byte symbol (a code point of 1-2 UTF-8 bytes); symbols missing from the
  // vocabulary are dropped, as HF's BPE without an unk token does.
  struct Symbol {
    int64_t id;
    int64_t prev, next;  // neighbours still in the word; -1 at the ends
    bool gone;           // merged into the symbol before it
  };
  std::vector<Symbol> word;
  word.reserve(symbols.size());
  for (size_t i = 0; i < symbols.size();) {
    size_t n = 1;
    while (i + n < symbols.size() && (static_cast<unsigned char>(symbols[i + n]) & 0xC0) == 0x80) ++n;
    const auto it = vocab_.find(symbols.substr(i, n));
    if (it != vocab_.end()) {
      const auto at = static_cast<int64_t>(word.size());
      word.push_back({it->second, at - 1, at + 1, false});
    }
    i += n;
  }
  if (!word.empty()) word.back().next = -1;
  // Merge the adjacent pair of lowest rank (leftmost among equals) until no pair has a rank, as HF's
  // tokenizers does: candidate merges in a min-heap by (rank, position); a candidate whose symbols
  // have changed since it was pushed is skipped when it comes up. O(n log n) in the word's length.
  struct Candidate {
    int rank;
    int64_t pos;
    int64_t made;  // the id the merge makes
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int64_t pos) {
    if (pos < 0 || word[static_cast<size_t>(pos)].next < 0) return;
    const auto it = merges_.find(
        {word[static_cast<size_t>(pos)].id, word[static_cast<size_t>(word[static_cast<size_t>(pos)].next)].id});
    if (it != merges_.end()) heap.push({it->second.rank, pos, it->second.made});
  };
  for (int64_t i = 0; i + 1 < static_cast<int64_t>(word.size()); ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = word[static_cast<size_t>(c.pos)];
    if (left.gone || left.next < 0) continue;
    Symbol& right = word[static_cast<size_t>(left.next)];
    const auto it = merges_.find({left.id, right.id});
    if (it == merges_.end() || it->second.made != c.made) continue;  // the pair changed since
    left.id = c.made;
    right.gone = true;
    left.next = right.next;
    if (right.next >= 0) word[static_cast<size_t>(right.next)].prev = c.pos;
    push(left.prev);
    push(c.pos);
  }
  std::vector<std::string> parts;
  for (const Symbol& s : word)
    if (!s.gone) parts.push_back(tokens_.at(s.id));
  if (cacheable) cache_->insert(symbols, parts);
  return parts;
}

void ByteLevelBpe::split_and_encode(const std::u32string& text, const std::vector<int64_t>& src, bool add_prefix_space,
                                    size_t max_pieces, Tokenized& out) const {
  const auto end = static_cast<int64_t>(text.size());
  std::string symbols;
  std::vector<int64_t> source;  // per byte symbol: the character of `text` it came from
  for (int64_t i = 0; i < end && out.tokens.size() < max_pieces;) {
    const int64_t n = match_length(text, i, end);
    symbols.clear();
    source.clear();
    for (int64_t k = i; k < i + n; ++k) {
      std::string bytes;
      unicode::append_utf8(bytes, text[k]);
      for (unsigned char b : bytes) {
        unicode::append_utf8(symbols, byte_symbol(b));
        source.push_back(k);
      }
    }
    size_t at = 0;  // byte symbols consumed
    for (auto& piece : bpe(symbols)) {
      const std::u32string cps = unicode::decode_utf8(piece);
      const auto len = static_cast<int64_t>(cps.size());
      CharSpan span{src[static_cast<size_t>(source[at])], src[static_cast<size_t>(source[at + len - 1])] + 1};
      // HF trims the spaces a piece carries from its offsets (RobertaProcessing's trim_offsets),
      // except the one space add_prefix_space put before the text, which is kept on a piece that
      // is the first or starts at 0 (it has its first character's span).
      int64_t lead = 0, trail = 0;
      if (!trim_offsets_) lead = trail = len;  // nothing to trim (ModernBERT's TemplateProcessing)
      while (lead < len && cps[lead] == kSpaceSymbol) ++lead;
      while (trail < len && cps[len - 1 - trail] == kSpaceSymbol) ++trail;
      if (lead > 0 && trim_offsets_) {
        const bool first = out.tokens.empty() || span.start == 0;
        if (first && add_prefix_space && lead == 1) lead = 0;
        span.start = std::min(span.start + lead, span.end);
      }
      if (trail > 0 && trim_offsets_ && span.end >= trail) span.end = std::max(span.end - trail, span.start);
      at += static_cast<size_t>(len);
      out.tokens.push_back(std::move(piece));
      out.offsets.push_back(span);
    }
    i += n;
  }
}

Tokenized ByteLevelBpe::tokenize_spaced(std::string_view utf8, bool add_prefix_space, size_t max_pieces) const {
  const std::u32string text = unicode::decode_utf8(utf8);
  Tokenized out;
  std::u32string segment;
  std::vector<int64_t> src;  // per character of `segment`: its index in `text`
  int64_t cursor = 0;        // the end of what was handed on (the white space an rstrip took included)
  auto plain = [&](int64_t begin, int64_t end) {
    if (begin >= end || out.tokens.size() >= max_pieces) return;
    segment.clear();
    src.clear();
    // add_prefix_space: a space before each stretch that does not start with one (HF's ByteLevel
    // pre-tokenizer), with the span of the stretch's first character.
    if (add_prefix_space && text[static_cast<size_t>(begin)] != U' ') segment.push_back(U' '), src.push_back(begin);
    if (nfc_)
      append_nfc(text, begin, end, segment, src);
    else
      for (int64_t k = begin; k < end; ++k) segment.push_back(text[static_cast<size_t>(k)]), src.push_back(k);
    split_and_encode(segment, src, add_prefix_space, max_pieces, out);
    cursor = end;
  };
  split_added_tokens(text, added_, plain, [&](size_t index, int64_t start, int64_t end) {
    // HF's added token carries the white space its lstrip took, which trim_offsets cuts off its
    // span, except one character on a first piece or one at 0 with add_prefix_space (as above).
    int64_t lead = 0;
    if (added_[index].lstrip)
      while (start - lead > cursor && unicode::is_white_space(text[static_cast<size_t>(start - lead - 1)])) ++lead;
    // Without trimming (ModernBERT's template) the span keeps all the white space lstrip took.
    if (out.tokens.size() >= max_pieces) return;
    const bool keep = add_prefix_space && lead == 1 && (out.tokens.empty() || start - lead == 0);
    out.tokens.push_back(added_[index].content);
    out.offsets.push_back({!trim_offsets_ ? start - lead : keep ? start - 1 : start, end});
    cursor = end;
    if (added_[index].rstrip)
      while (cursor < static_cast<int64_t>(text.size()) && unicode::is_white_space(text[static_cast<size_t>(cursor)]))
        ++cursor;
  });
  return out;
}

Tokenized ByteLevelBpe::tokenize_with_offsets(std::string_view utf8) const {
  return tokenize_spaced(utf8, add_prefix_space_, std::numeric_limits<size_t>::max());
}

Tokenized ByteLevelBpe::tokenize_head(std::string_view utf8, size_t max_pieces) const {
  return tokenize_spaced(utf8, add_prefix_space_, max_pieces);
}

Tokenized ByteLevelBpe::tokenize_word(std::string_view word) const {
  return tokenize_spaced(word, /*add_prefix_space=*/words_with_space_ || add_prefix_space_,
                         std::numeric_limits<size_t>::max());
}

}  // namespace unif::framework
