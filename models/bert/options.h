// BertOptions: the name EncoderConfig (models/encoder_config.h) had, kept while code outside
// models/ still uses it.
#pragma once
#include "models/encoder_config.h"

namespace unif::models {

using BertOptions = EncoderConfig;

}  // namespace unif::models
