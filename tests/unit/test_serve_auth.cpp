// `unif serve --api-key`: which requests need the key, the Authorization header's forms, loopback hosts.
#include <catch2/catch.hpp>

#include "apps/unif/serve/auth.h"

namespace auth = unif::app::serve;

TEST_CASE("serve: the API key is asked of every route but /health", "[unit][serve]") {
  CHECK_FALSE(auth::needs_api_key("/health"));
  for (const char* path : {"/v1/predict", "/embed", "/", "/v1/embeddings", "/metrics", "/nowhere", "/health/x"})
    CHECK(auth::needs_api_key(path));
}

TEST_CASE("serve: Authorization: Bearer KEY, scheme in any case, the key exactly", "[unit][serve][bad-input]") {
  const std::string key = "s3cret-key";
  CHECK(auth::bearer_matches("Bearer s3cret-key", key));
  CHECK(auth::bearer_matches("bearer s3cret-key", key));
  CHECK(auth::bearer_matches("BEARER   s3cret-key ", key));
  CHECK_FALSE(auth::bearer_matches("", key));
  CHECK_FALSE(auth::bearer_matches("Bearer", key));
  CHECK_FALSE(auth::bearer_matches("Bearer ", key));
  CHECK_FALSE(auth::bearer_matches("Bearers3cret-key", key));
  CHECK_FALSE(auth::bearer_matches("Basic s3cret-key", key));
  CHECK_FALSE(auth::bearer_matches("s3cret-key", key));
  CHECK_FALSE(auth::bearer_matches("Bearer s3cret-ke", key));    // a prefix
  CHECK_FALSE(auth::bearer_matches("Bearer s3cret-keyy", key));  // longer
  CHECK_FALSE(auth::bearer_matches("Bearer S3cret-key", key));   // the key is case-sensitive
  CHECK_FALSE(auth::bearer_matches("Bearer s3cret key", key));
  CHECK_FALSE(auth::bearer_matches(std::string("Bearer s3cret-key\0", 18), key));
  CHECK_FALSE(auth::bearer_matches("Bearer ", ""));  // no key: nothing matches it
}

TEST_CASE("serve: loopback hosts are this machine only", "[unit][serve]") {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"}) CHECK(auth::is_loopback_host(h));
  for (const char* h :
       {"0.0.0.0", "::", "10.0.0.5", "192.168.1.1", "example.com", "127.0.0.1.example.com", "1270.0.0.1", ""})
    CHECK_FALSE(auth::is_loopback_host(h));
}
