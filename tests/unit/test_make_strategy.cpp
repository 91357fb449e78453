// make_strategy (framework/train/build.h): adversarial.method names the strategy class, each with
// its passes per step; an unknown name is a UserError; freeat refuses gradient accumulation in the
// config. (Moved from tests/unit/test_adversarial.cpp, which links only the strategies and engines.)
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/train/build.h"

using namespace unif;

TEST_CASE("make_strategy maps adversarial.method - freeat refuses gradient accumulation", "[unit][adversarial]") {
  framework::AdversarialConfig cfg;
  using M = framework::AdversarialMethod;
  const std::vector<std::pair<M, int64_t>> expected = {{M::None, 1},   {M::Fgm, 2},    {M::Pgd, 4},
                                                       {M::FreeLb, 3}, {M::FreeAt, 3}, {M::Smart, 7}};
  for (const auto& [method, passes] : expected) {
    cfg.method = method;
    auto s = framework::make_strategy(cfg);
    CHECK(s->name() == name_of(method));
    CHECK(s->passes_per_step() == passes);
  }
  cfg.smart_bregman = 0.0;  // no teacher: one pass less
  cfg.method = M::Smart;
  CHECK(framework::make_strategy(cfg)->passes_per_step() == 6);
  CHECK_THROWS_AS(framework::parse_config("adversarial: {method: vat}\n", "t.yaml"), UserError);

  const std::string yaml = "adversarial: {method: freeat}\ntraining: {grad_accum_steps: 2}\n";
  CHECK_THROWS_WITH(framework::parse_config(yaml, "t.yaml"),
                    Catch::Contains("t.yaml: training.grad_accum_steps: expected 1 with adversarial.method freeat"));
  CHECK_NOTHROW(framework::parse_config("adversarial: {method: freeat}\n", "t.yaml"));
  CHECK_NOTHROW(framework::parse_config("adversarial: {method: fgm}\ntraining: {grad_accum_steps: 2}\n", "t.yaml"));
}
