// The CRF of token classification (models/heads/crf.h) against pytorch-crf 0.7.2
// (tests/fixtures/crf/reference.json, made by make_reference.py beside it): per-row
// log-likelihood, Viterbi paths and gradients; gradients by finite differences; the BIO / BIOES
// constraints; the token classifier with a CRF: its loss is the CRF's on each row's labeled
// positions, its decode_tags() the Viterbi path, clones and constraints kept; each bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/heads/crf.h"
#include "models/heads/token_classification.h"

namespace {

using crf_json = nlohmann::json;

const crf_json& crf_reference() {
  static const crf_json ref = [] {
    std::ifstream in(std::string(UNIF_TEST_FIXTURES) + "/crf/reference.json");
    REQUIRE(in.good());
    return crf_json::parse(in);
  }();
  return ref;
}

// A nested JSON list of numbers as a float64 tensor of its shape.
torch::Tensor crf_tensor(const crf_json& j) {
  std::vector<int64_t> shape;
  const crf_json* at = &j;
  while (at->is_array()) {
    shape.push_back(static_cast<int64_t>(at->size()));
    if (at->empty()) break;
    at = &(*at)[0];
  }
  std::vector<double> flat;
  std::function<void(const crf_json&)> walk = [&](const crf_json& x) {
    if (x.is_array())
      for (const auto& y : x) walk(y);
    else
      flat.push_back(x.get<double>());
  };
  walk(j);
  return torch::tensor(flat, torch::kDouble).reshape(shape);
}

double crf_max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// A CRF holding a reference case's parameters, in float64.
unif::models::Crf crf_of(const crf_json& c) {
  unif::models::Crf crf(c.at("num_tags").get<int64_t>());
  crf->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  crf->transitions.copy_(crf_tensor(c.at("transitions")));
  crf->start_transitions.copy_(crf_tensor(c.at("start_transitions")));
  crf->end_transitions.copy_(crf_tensor(c.at("end_transitions")));
  return crf;
}

torch::Tensor crf_mask(const crf_json& c, int64_t length) {
  const auto lengths = c.at("lengths").get<std::vector<int64_t>>();
  auto mask = torch::zeros({static_cast<int64_t>(lengths.size()), length}, torch::kBool);
  for (size_t b = 0; b < lengths.size(); ++b) mask[static_cast<int64_t>(b)].narrow(0, 0, lengths[b]).fill_(true);
  return mask;
}

}  // namespace

TEST_CASE("crf: log-likelihood, Viterbi paths and gradients equal pytorch-crf's", "[unit][crf]") {
  for (const auto& c : crf_reference().at("cases")) {
    INFO(c.at("name").get<std::string>());
    auto crf = crf_of(c);
    auto emissions = crf_tensor(c.at("emissions")).requires_grad_(true);
    const auto tags = crf_tensor(c.at("tags")).to(torch::kLong);
    const auto mask = crf_mask(c, emissions.size(1));
    const auto llh = crf->log_likelihood(emissions, tags, mask);
    CHECK(crf_max_diff(llh, crf_tensor(c.at("log_likelihood"))) < 1e-10);
    llh.sum().backward();
    CHECK(crf_max_diff(emissions.grad(), crf_tensor(c.at("grad_emissions"))) < 1e-10);
    CHECK(crf_max_diff(crf->transitions.grad(), crf_tensor(c.at("grad_transitions"))) < 1e-10);
    CHECK(crf_max_diff(crf->start_transitions.grad(), crf_tensor(c.at("grad_start_transitions"))) < 1e-10);
    CHECK(crf_max_diff(crf->end_transitions.grad(), crf_tensor(c.at("grad_end_transitions"))) < 1e-10);
    const auto lengths = c.at("lengths").get<std::vector<int64_t>>();
    for (size_t b = 0; b < lengths.size(); ++b) {
      torch::Tensor marginals;
      const auto path = crf->viterbi(emissions.detach()[static_cast<int64_t>(b)].narrow(0, 0, lengths[b]), &marginals);
      const auto want = c.at("viterbi")[b].get<std::vector<int64_t>>();
      CHECK(std::vector<int64_t>(path.data_ptr<int64_t>(), path.data_ptr<int64_t>() + path.numel()) == want);
      // Marginals are distributions.
      CHECK(crf_max_diff(marginals.sum(1), torch::ones({lengths[b]}, torch::kDouble)) < 1e-9);
    }
  }
}

TEST_CASE("crf: gradients by finite differences, and the marginals by brute force", "[unit][crf]") {
  torch::manual_seed(5);
  unif::models::Crf crf(4);
  crf->to(torch::kDouble);
  auto emissions = torch::randn({2, 5, 4}, torch::kDouble).requires_grad_(true);
  const auto tags = torch::randint(0, 4, {2, 5}, torch::kLong);
  auto mask = torch::ones({2, 5}, torch::kBool);
  mask[1].narrow(0, 3, 2).fill_(false);
  auto loss = [&] { return -crf->log_likelihood(emissions, tags, mask).sum(); };
  loss().backward();
  const double h = 1e-6;
  auto check_param = [&](torch::Tensor p, const std::string& name) {
    INFO(name);
    const auto grad = p.grad().clone();
    auto flat = p.detach().view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double x = flat[i].item<double>();
      torch::NoGradGuard no_grad;
      flat[i] = x + h;
      const double up = loss().item<double>();
      flat[i] = x - h;
      const double down = loss().item<double>();
      flat[i] = x;
      CHECK(std::abs((up - down) / (2 * h) - grad.view({-1})[i].item<double>()) < 1e-6);
    }
  };
  check_param(emissions, "emissions");
  check_param(crf->transitions, "transitions");
  check_param(crf->start_transitions, "start_transitions");
  check_param(crf->end_transitions, "end_transitions");
  // Masked positions of row 1 get no gradient.
  CHECK(emissions.grad()[1].narrow(0, 3, 2).abs().max().item<double>() == 0.0);

  // Brute force over all 4^3 paths of a 3-position sequence: Viterbi is the best path, marginals sum it up.
  const auto em = torch::randn({3, 4}, torch::kDouble);
  torch::Tensor marginals;
  const auto path = crf->viterbi(em, &marginals);
  double best = -1e300, total = 0;
  std::vector<int64_t> best_path;
  auto want = torch::zeros({3, 4}, torch::kDouble);
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 4; ++c) {
        const auto y = torch::tensor({a, b, c}, torch::kLong).unsqueeze(0);
        const double s = crf->log_likelihood(em.unsqueeze(0), y, torch::ones({1, 3}, torch::kBool)).item<double>();
        total += std::exp(s);
        want[0][a] += std::exp(s);
        want[1][b] += std::exp(s);
        want[2][c] += std::exp(s);
        if (s > best) {
          best = s;
          best_path = {a, b, c};
        }
      }
  CHECK(std::abs(total - 1.0) < 1e-9);  // log-likelihoods of all paths are a distribution
  CHECK(std::vector<int64_t>(path.data_ptr<int64_t>(), path.data_ptr<int64_t>() + 3) == best_path);
  CHECK(crf_max_diff(marginals, want) < 1e-9);
}

TEST_CASE("crf: BIO and BIOES constraints from the label names", "[unit][crf]") {
  using unif::models::crf_constraints;
  const std::vector<std::string> bio{"B-LOC", "B-PER", "I-LOC", "I-PER", "O"};
  const auto c = crf_constraints(bio);
  REQUIRE(c);
  CHECK(c->scheme == "BIO");
  auto allowed = [&](int64_t i, int64_t j) { return c->transitions[i][j].item<bool>(); };
  CHECK(allowed(0, 2));                   // B-LOC -> I-LOC
  CHECK(allowed(2, 2));                   // I-LOC -> I-LOC
  CHECK_FALSE(allowed(4, 2));             // O -> I-LOC
  CHECK_FALSE(allowed(1, 2));             // B-PER -> I-LOC
  CHECK_FALSE(allowed(3, 2));             // I-PER -> I-LOC
  CHECK(allowed(2, 4));                   // I-LOC -> O
  CHECK(allowed(3, 0));                   // I-PER -> B-LOC
  CHECK_FALSE(c->start[2].item<bool>());  // I-LOC first
  CHECK(c->start[0].item<bool>());
  CHECK(c->end.all().item<bool>());  // BIO: any tag may end

  const std::vector<std::string> bioes{"B-X", "I-X", "E-X", "S-X", "O"};
  const auto e = crf_constraints(bioes);
  REQUIRE(e);
  CHECK(e->scheme == "BIOES");
  auto ok = [&](int64_t i, int64_t j) { return e->transitions[i][j].item<bool>(); };
  CHECK(ok(0, 1));                      // B -> I
  CHECK(ok(0, 2));                      // B -> E
  CHECK_FALSE(ok(0, 4));                // B -> O: the entity must end first
  CHECK_FALSE(ok(2, 1));                // E -> I
  CHECK(ok(2, 4));                      // E -> O
  CHECK(ok(3, 0));                      // S -> B
  CHECK_FALSE(e->end[0].item<bool>());  // B last
  CHECK_FALSE(e->end[1].item<bool>());  // I last
  CHECK(e->end[2].item<bool>());
  // BILOU reads as BIOES; names without a scheme get none.
  CHECK(crf_constraints({"B-X", "I-X", "L-X", "U-X", "O"})->scheme == "BIOES");
  CHECK_FALSE(crf_constraints({"PER", "LOC", "O"}));
  CHECK_FALSE(crf_constraints({"B-X", "O", "X-Y"}));
}

TEST_CASE("crf: a constrained CRF never decodes a forbidden move, and keeps them out of training", "[unit][crf]") {
  const std::vector<std::string> names{"B-LOC", "I-LOC", "O"};
  unif::models::Crf crf(3);
  crf->constrain(*unif::models::crf_constraints(names));
  CHECK(crf->transitions[2][1].item<double>() == unif::models::CrfImpl::kForbidden);  // O -> I-LOC saved as such
  CHECK(crf->start_transitions[1].item<double>() == unif::models::CrfImpl::kForbidden);
  // Emissions that favour I-LOC everywhere: the path starts with B-LOC.
  const auto em = torch::tensor({{0.0, 5.0, 0.0}, {0.0, 5.0, 0.0}, {0.0, 0.0, 5.0}, {0.0, 5.0, 0.0}}, torch::kFloat);
  const auto path = crf->viterbi(em);
  CHECK(path[0].item<int64_t>() == 0);
  CHECK(path[1].item<int64_t>() == 1);
  CHECK(path[2].item<int64_t>() == 2);
  CHECK(path[3].item<int64_t>() == 0);  // after O, I-LOC is forbidden: B-LOC
  // A forbidden move gets no gradient, so it stays at kForbidden.
  const auto llh = crf->log_likelihood(em.unsqueeze(0), torch::tensor({{0, 1, 2, 0}}, torch::kLong),
                                       torch::ones({1, 4}, torch::kBool));
  llh.sum().backward();
  CHECK(crf->transitions.grad()[2][1].item<double>() == 0.0);
  CHECK(crf->start_transitions.grad()[1].item<double>() == 0.0);
  CHECK(crf->transitions.grad()[0][1].item<double>() != 0.0);
}

TEST_CASE("crf: the token classifier's loss is the CRF's on each row's labeled positions", "[unit][crf]") {
  unif::models::EncoderConfig cfg;
  cfg.vocab_size(50).hidden_size(16).num_hidden_layers(1).num_attention_heads(2).intermediate_size(32);
  cfg.hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0);
  torch::manual_seed(3);
  unif::models::EncoderForTokenClassificationImpl model(cfg, 3);
  model.enable_crf(unif::models::crf_constraints({"B-X", "I-X", "O"}));
  REQUIRE(model.has_crf());
  unif::models::Batch batch;
  batch.input_ids = torch::randint(1, 50, {2, 7}, torch::kLong);
  batch.token_type_ids = torch::zeros({2, 7}, torch::kLong);
  batch.attention_mask = torch::ones({2, 7}, torch::kLong);
  batch.attention_mask[1].narrow(0, 5, 2).fill_(0);
  // Row 0 labels words at positions 1, 2, 4, 5 (a word of two pieces at 2-3); row 1 at 1 and 3.
  batch.labels = torch::full({2, 7}, -100, torch::kLong);
  batch.labels[0][1] = 0;
  batch.labels[0][2] = 1;
  batch.labels[0][4] = 2;
  batch.labels[0][5] = 0;
  batch.labels[1][1] = 2;
  batch.labels[1][3] = 2;
  const auto out = model.forward(batch);
  CHECK(out.loss_count == 6);  // Z: labeled tokens, as without a CRF
  const auto idx0 = torch::tensor({1, 2, 4, 5}, torch::kLong), idx1 = torch::tensor({1, 3}, torch::kLong);
  const auto l0 =
      model.crf->log_likelihood(out.logits[0].index_select(0, idx0).unsqueeze(0),
                                torch::tensor({{0, 1, 2, 0}}, torch::kLong), torch::ones({1, 4}, torch::kBool));
  const auto l1 = model.crf->log_likelihood(out.logits[1].index_select(0, idx1).unsqueeze(0),
                                            torch::tensor({{2, 2}}, torch::kLong), torch::ones({1, 2}, torch::kBool));
  CHECK(std::abs(out.example_losses[0].item<double>() + l0.item<double>()) < 1e-5);
  CHECK(std::abs(out.example_losses[1].item<double>() + l1.item<double>()) < 1e-5);

  // decode_tags is the Viterbi path; without the CRF it is the argmax.
  const auto em = torch::tensor({{0.0, 3.0, 0.0}, {0.0, 0.0, 1.0}}, torch::kFloat);
  torch::Tensor probs;
  const auto tags = model.decode_tags(em, &probs);
  CHECK(tags[0].item<int64_t>() == 0);  // I-X first is forbidden
  CHECK(probs.size(0) == 2);

  // A clone keeps the CRF, its values and its constraints.
  auto clone = std::dynamic_pointer_cast<unif::models::EncoderForTokenClassificationImpl>(model.clone_model());
  REQUIRE(clone->has_crf());
  CHECK(torch::equal(clone->crf->transitions, model.crf->transitions));
  CHECK(clone->crf->constrained());
  CHECK(clone->decode_tags(em)[0].item<int64_t>() == 0);

  model.disable_crf();
  CHECK_FALSE(model.has_crf());
  CHECK(model.named_parameters().find("crf.transitions") == nullptr);
  CHECK(model.decode_tags(em)[0].item<int64_t>() == 1);  // argmax
  // A checkpoint with crf.* brings the CRF back before its weights load.
  model.adopt_checkpoint_modules({"bert.embeddings.word_embeddings.weight", "crf.transitions"});
  CHECK(model.has_crf());
  CHECK(model.named_parameters().find("crf.end_transitions") != nullptr);
}

TEST_CASE("crf: bad inputs", "[unit][crf]") {
  CHECK_THROWS_AS(unif::models::Crf(0), std::invalid_argument);
  unif::models::Crf crf(3);
  CHECK_THROWS_AS(crf->log_likelihood(torch::zeros({2, 4, 5}), torch::zeros({2, 4}, torch::kLong),
                                      torch::ones({2, 4}, torch::kBool)),
                  std::invalid_argument);
  CHECK_THROWS_AS(crf->viterbi(torch::zeros({2, 4, 3})), std::invalid_argument);
  CHECK_THROWS_AS(crf->constrain(*unif::models::crf_constraints({"B-X", "O"})), std::invalid_argument);
  // An empty sequence: log-likelihood 0, an empty path.
  CHECK(crf->log_likelihood(torch::zeros({1, 0, 3}), torch::zeros({1, 0}, torch::kLong),
                            torch::zeros({1, 0}, torch::kBool))
            .item<double>() == 0.0);
  CHECK(crf->viterbi(torch::zeros({0, 3})).numel() == 0);
}
