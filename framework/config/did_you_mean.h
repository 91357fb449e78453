// "Did you mean ...?" for misspelled names (config keys, enum values, subcommands): the closest
// candidate by edit distance (optimal string alignment, so a swapped pair of letters counts 1,
// letter case ignored), offered only when it is close enough to be a plausible typo.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace unif::framework {

/// Optimal-string-alignment distance between a and b, ignoring ASCII letter case.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word` when it is a plausible typo of it (distance <= 1 for words of up
/// to 4 characters, else <= max(2, length / 3)); "" when none is. Ties go to the first candidate.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" for closest_match's answer, "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace unif::framework
